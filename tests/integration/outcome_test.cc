// Issue 20, point 2: every tool error was logged and counted as `lost`, a
// refused lockdown, a full queue and a dead zygote alike. Each cause has its
// own label now, in the call's log line ("event":"run", "reason") and in
// mcp_exec_runs_total{outcome}. A test per cause that can be brought about
// from outside; the rest (start_failed, lockdown_refused,
// sandbox_unavailable, layers_missing) need a broken host or sandbox, and
// their labels are tied to the metric in tests/unit/metrics_test.cc.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>

#include "http_harness.h"
#include "server_process.h"

namespace mcpexec::testing {
namespace {

// The log lines of one event whose reason is `reason`.
int CountRunLines(const std::string& log, const std::string& reason) {
  int n = 0;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == "run" && j.value("reason", "") == reason) ++n;
  }
  return n;
}

// The same, once the server's stderr has caught up with its answers (it is
// read on a thread of the test's): the count after `want` appeared.
int RunLines(ServerProcess& s, const std::string& reason, int want = 1) {
  WaitUntil([&] { return CountRunLines(s.Stderr(), reason) >= want; }, 5000);
  return CountRunLines(s.Stderr(), reason);
}

json ToolErrorOf(ServerProcess& s, const json& id) {
  json m = s.WaitForId(id, 60000);
  EXPECT_TRUE(m.contains("result")) << m.dump();
  EXPECT_EQ(m["result"].value("isError", false), true) << m.dump();
  return m;
}

TEST(OutcomeTest, SandboxLost) {
  ServerProcess s;
  s.Initialize();
  const pid_t zygote = s.ZygotePid();
  ASSERT_FALSE(s.StartSleepingRun(10, "5600").empty());
  ASSERT_EQ(kill(zygote, SIGKILL), 0);
  json m = ToolErrorOf(s, 10);
  EXPECT_NE(m.dump().find("the sandbox process died during this run"), std::string::npos);
  EXPECT_EQ(RunLines(s, "sandbox_lost"), 1) << s.Stderr();
  EXPECT_EQ(CountRunLines(s.Stderr(), "lost"), 0);
}

// A stopped zygote never confirms the end of a run it was told to kill.
TEST(OutcomeTest, SandboxStuck) {
  ServerProcess s;
  s.Initialize();
  const pid_t zygote = s.ZygotePid();
  ASSERT_FALSE(s.StartSleepingRun(11, "5601", 2).empty());
  ASSERT_EQ(kill(zygote, SIGSTOP), 0);
  json m = s.WaitForId(11, 30000);
  kill(zygote, SIGCONT);
  EXPECT_NE(m.dump().find("did not confirm the end of this run"), std::string::npos) << m.dump();
  EXPECT_EQ(RunLines(s, "sandbox_stuck"), 1) << s.Stderr();
}

TEST(OutcomeTest, CancelledWhileQueued) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_CONCURRENT", "1"}});
  s.Initialize();
  const std::string marker = s.StartSleepingRun(12, "5602");
  ASSERT_FALSE(marker.empty());
  s.SendCall(13, {{"code", "print('never')"}});
  ASSERT_EQ(s.Request("ping", json::object())["result"], json::object());  // 13 is queued
  s.Send({{"jsonrpc", "2.0"},
          {"method", "notifications/cancelled"},
          {"params", {{"requestId", 13}, {"reason", "test"}}}});
  EXPECT_TRUE(WaitUntil(
      [&] {
        std::string log = s.Stderr();
        return log.find("\"reason\":\"cancelled\"") != std::string::npos;
      },
      10000))
      << s.Stderr();
  std::string log = s.Stderr();
  EXPECT_NE(log.find("\"lockdown_us\":-1"), std::string::npos) << "a call that never ran: " << log;
  s.Send({{"jsonrpc", "2.0"},
          {"method", "notifications/cancelled"},
          {"params", {{"requestId", 12}, {"reason", "test"}}}});
}

TEST(OutcomeTest, ShutdownWhileQueued) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_CONCURRENT", "1"}});
  s.Initialize();
  ASSERT_FALSE(s.StartSleepingRun(14, "5603").empty());
  s.SendCall(15, {{"code", "print('never')"}});
  ASSERT_EQ(s.Request("ping", json::object())["result"], json::object());
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  json m = ToolErrorOf(s, 15);
  EXPECT_NE(m.dump().find("still queued and did not run"), std::string::npos) << m.dump();
  EXPECT_EQ(s.Wait(30000), 0);
  // The running one is a run that was ended (shutdown too, with its
  // output); the queued one failed without running.
  EXPECT_EQ(RunLines(s, "shutdown", 2), 2) << s.Stderr();
}

// The server's own folder gone under it: the next run cannot be prepared.
TEST(OutcomeTest, Internal) {
  char tmpl[] = "/tmp/mcp-exec-outcome-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  {
    ServerProcess s(Env{{"MCP_EXEC_WORKDIR_ROOT", root}});
    s.Initialize();
    ASSERT_EQ(s.Exec("print(1)")["stdout"], "1\n");
    DIR* d = opendir(root.c_str());
    ASSERT_NE(d, nullptr);
    std::string base;
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("mcp-exec-", 0) == 0 && name.rfind("mcp-exec-cache-", 0) != 0 &&
          name.rfind("mcp-exec-resources-", 0) != 0) {
        base = name;
      }
    }
    closedir(d);
    ASSERT_FALSE(base.empty());
    ASSERT_EQ(system(("rm -rf '" + root + "/" + base + "'").c_str()), 0);
    json r = s.Call({{"code", "print(2)"}});
    EXPECT_EQ(r.value("isError", false), true) << r.dump();
    EXPECT_NE(r.dump().find("internal error: mkdtemp"), std::string::npos) << r.dump();
    EXPECT_EQ(RunLines(s, "internal"), 1) << s.Stderr();
  }
  ASSERT_EQ(system(("rm -rf '" + root + "'").c_str()), 0);
}

TEST(OutcomeTest, PySessionsFull) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_PY_SESSIONS", "1"}});
  s.Initialize();
  // The one session busy: an idle one would give way.
  s.SendCall(901, {{"code", "import time; time.sleep(5)"}, {"session", "a"}});
  ASSERT_TRUE(s.StderrHas("\"event\":\"py_session_start\"", 20000)) << s.Stderr();
  json r = s.Call({{"code", "x = 2"}, {"session", "b"}});
  EXPECT_EQ(r.value("isError", false), true) << r.dump();
  EXPECT_TRUE(s.StderrHas("\"event\":\"py_sessions_full\"")) << s.Stderr();
}

class OutcomeMetricsTest : public HttpServerTest {};

// Over HTTP, where /metrics is: at capacity is counted as such (it was
// `refused`), a lost sandbox as sandbox_lost (it was `lost`), and every
// label is shown from the start.
TEST_F(OutcomeMetricsTest, EachCauseIsCountedUnderItsOwnLabel) {
  Start({{"MCP_EXEC_MAX_CONCURRENT", "1"}, {"MCP_EXEC_MAX_QUEUE", "0"}});
  for (const char* label : {"at_capacity", "py_sessions_full", "layers_missing", "cancelled",
                            "shutdown", "internal", "sandbox_unavailable", "start_failed",
                            "lockdown_refused", "sandbox_lost", "sandbox_stuck"}) {
    EXPECT_EQ(Metric(std::string("mcp_exec_runs_total{outcome=\"") + label + "\"}"), 0) << label;
  }
  EXPECT_EQ(Metric("mcp_exec_runs_total{outcome=\"lost\"}"), -1);
  EXPECT_EQ(Metric("mcp_exec_runs_total{outcome=\"refused\"}"), -1);
  const std::string sid = Initialize();
  auto call = [&](int id, const std::string& code) {
    json req = {{"jsonrpc", "2.0"},
                {"id", id},
                {"method", "tools/call"},
                {"params", {{"name", "exec"}, {"arguments", {{"code", code}}}}}};
    return std::thread([this, sid, req] {
      (void)Client().Post("/mcp", Session(sid), req.dump(), "application/json");
    });
  };
  const std::string marker = "5604." + Marker("");
  std::thread busy = call(20, "import subprocess; subprocess.run(['sleep', '" + marker + "'])");
  ASSERT_TRUE(WaitUntil([&] { return !PidsWithCmdlineContaining(marker).empty(); }, 20000));
  json req = {{"jsonrpc", "2.0"},
              {"id", 21},
              {"method", "tools/call"},
              {"params", {{"name", "exec"}, {"arguments", {{"code", "print(1)"}}}}}};
  auto res = Client().Post("/mcp", Session(sid), req.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_NE(Message(res->body).dump().find("the server is at capacity"), std::string::npos)
      << res->body;
  EXPECT_EQ(Metric("mcp_exec_runs_total{outcome=\"at_capacity\"}"), 1);
  ASSERT_EQ(kill(server_->ZygotePid(), SIGKILL), 0);
  busy.join();
  EXPECT_TRUE(WaitUntil(
      [&] { return Metric("mcp_exec_runs_total{outcome=\"sandbox_lost\"}") == 1; }, 10000));
}

}  // namespace
}  // namespace mcpexec::testing
