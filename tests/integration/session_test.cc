// Python sessions through the built server over stdio: every way a session
// can end takes its processes and its directory with it, an idle session
// holds no run slot, and its limits hold for the session as a whole (memory)
// or per call (CPU time). The SDK client tests (tests/client/sessions.test.mjs)
// cover the interface on each transport.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "server_process.h"

namespace mcpexec::testing {
namespace {

// A server whose runs' directories live under a folder of the test's own,
// so that what is left of a session there can be counted.
class SessionEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mcp-exec-session-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + root_ + "'";
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  Env EnvWith(Env extra) {
    extra["MCP_EXEC_WORKDIR_ROOT"] = root_;
    return extra;
  }
  // Run directories under the server's base folder (root_/mcp-exec-*/run-*).
  int RunDirs() const {
    int n = 0;
    DIR* d = opendir(root_.c_str());
    if (!d) return -1;
    while (dirent* e = readdir(d)) {
      std::string base = e->d_name;
      if (base.rfind("mcp-exec-", 0) != 0) continue;
      DIR* b = opendir((root_ + "/" + base).c_str());
      if (!b) continue;
      while (dirent* r = readdir(b)) n += std::string(r->d_name).rfind("run-", 0) == 0 ? 1 : 0;
      closedir(b);
    }
    closedir(d);
    return n;
  }
  // Starts session `name` with a background process that would outlive it
  // and a file in its directory; returns the process's marker.
  static std::string StartMarked(ServerProcess& s, const std::string& name,
                                 const json& extra = {}) {
    std::string marker = Marker("7");
    json args = {{"code",
                  "import subprocess\nopen('state.txt', 'w').write('kept')\n"
                  "child = subprocess.Popen(['sleep', '" +
                      marker + "'])\nprint('started')"},
                 {"session", name}};
    for (auto& [k, v] : extra.items()) args[k] = v;
    json r = s.Call(args);
    EXPECT_FALSE(r.value("isError", false)) << r.dump();
    EXPECT_EQ(r["structuredContent"]["session_new"], true) << r.dump();
    EXPECT_EQ(r["structuredContent"]["stdout"], "started\n") << r.dump();
    EXPECT_TRUE(WaitUntil([&] { return !PidsWithCmdlineContaining(marker).empty(); }, 5000))
        << "its process runs";
    return marker;
  }
  static bool Gone(const std::string& marker) {
    return WaitUntil([&] { return PidsWithCmdlineContaining(marker).empty(); }, 10000);
  }
  std::string root_;
};

TEST_F(SessionEndTest, ResetEndsTheOldInterpreter) {
  ServerProcess s(EnvWith({}));
  s.Initialize();
  std::string marker = StartMarked(s, "a");
  EXPECT_EQ(RunDirs(), 1);
  json r = s.Call({{"code", "import os\nprint(os.path.exists('state.txt'))"},
                   {"session", "a"},
                   {"reset", true}});
  EXPECT_EQ(r["structuredContent"]["stdout"], "False\n") << r.dump();
  EXPECT_EQ(r["structuredContent"]["session_new"], true);
  EXPECT_TRUE(Gone(marker));
  EXPECT_TRUE(WaitUntil([&] { return RunDirs() == 1; }, 5000)) << "only the new one's";
}

// Issue 42, point 5: a session ends at once when its call asks (end: true),
// not at the idle bound: its processes and folder go before the answer's
// sweep, a name starts afresh next time, and a handle is refused saying why.
TEST_F(SessionEndTest, EndTrueEndsTheSessionAtOnce) {
  ServerProcess s(EnvWith({}));
  s.Initialize();
  std::string marker = StartMarked(s, "a");
  json r = s.Call({{"code", "print('last')"}, {"session", "a"}, {"end", true}});
  EXPECT_EQ(r["structuredContent"]["stdout"], "last\n") << r.dump();
  EXPECT_NE(r["structuredContent"].value("session_ended", "").find("end: true"), std::string::npos)
      << r.dump();
  EXPECT_TRUE(Gone(marker));
  EXPECT_TRUE(WaitUntil([&] { return RunDirs() == 0; }, 5000)) << "its folder went with it";
  EXPECT_EQ(s.Exec("print('state' in globals())", {{"session", "a"}})["session_new"], true);
  json handle = s.Exec("state = 1", {{"session", "new"}});
  json end = s.Call({{"code", "pass"}, {"session", handle["session"]}, {"end", true}});
  EXPECT_FALSE(end.value("isError", false)) << end.dump();
  json gone = s.Call({{"code", "print(state)"}, {"session", handle["session"]}});
  EXPECT_TRUE(gone.value("isError", false)) << gone.dump();
  EXPECT_NE(gone.dump().find("end: true"), std::string::npos) << gone.dump();
  json alone = s.Call({{"code", "pass"}, {"end", true}});
  EXPECT_TRUE(alone.value("isError", false)) << alone.dump();
  EXPECT_NE(alone.dump().find("end needs a session"), std::string::npos) << alone.dump();
}

// Issue 19, point 1: a cell raised its own RLIMIT_CPU soft limit to the
// hard one (the session's whole budget) and left threads spinning: 29.9 s
// of CPU after a 2-second cell, where the bound is what it had used plus the
// cell's timeout and 5 s. The zygote, out of the code's reach, holds it.
TEST_F(SessionEndTest, ThreadsLeftSpinningCannotRaiseTheirCpuBound) {
  ServerProcess s(EnvWith({}));
  s.Initialize();
  json r = s.Exec(R"(
import resource, threading
soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
def spin():
    while True:
        pass
for _ in range(2):
    threading.Thread(target=spin, daemon=True).start()
print("spinning, hard limit", hard)
)",
                  {{"session", "spin"}, {"timeout_s", 2}});
  ASSERT_EQ(r["exit_code"], 0) << r.dump();
  // At most 7 s of CPU (2 + 5, and what the cell used), on two threads; the
  // zygote looks once a second.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(WaitUntil(
      [&] { return s.Stderr().find("\"reason\":\"interpreter_ended\"") != std::string::npos; },
      30000))
      << "the session's threads still spin";
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("ended_after_s", std::to_string(took));
  json next = s.Exec("print('again')", {{"session", "spin"}});
  EXPECT_EQ(next["session_new"], true) << next.dump();
}

// Issue 19, point 2: children a session forked and never waited for are
// zombies, gone from every process listing that skips them, yet each still
// counts against RLIMIT_NPROC until it is reaped. They count for the bound.
TEST_F(SessionEndTest, ZombiesASessionKeepsCountAgainstItsBound) {
  ServerProcess s(EnvWith({{"MCP_EXEC_MAX_PROCESSES", "64"}}));
  s.Initialize();
  json held = s.Exec(R"(
import os
for _ in range(44):
    if os.fork() == 0:
        os._exit(0)
print("44 left unreaped")
)",
                     {{"session", "zombies"}});
  // The cell may print and return before the zygote's count sees its
  // zombies, or the count may end the session while it still forks (a slow
  // day's forks take longer than the count's second): both are the bound
  // holding, and an ended session is told why.
  if (held["stdout"] != "44 left unreaped\n") {
    ASSERT_TRUE(held.contains("session_ended")) << held.dump();
    EXPECT_NE(held["session_ended"].get<std::string>().find("held more than half"),
              std::string::npos)
        << held.dump();
  }
  json r = ForkInARun(s, 30);
  EXPECT_EQ(r["stdout"], "30 forked\n") << r.dump();
  EXPECT_EQ(s.Exec("print(1)", {{"session", "zombies"}})["session_new"], true);
}

// The bound counts what sessions hold beyond their own interpreters (its
// main thread and output flusher, and its init): sixteen idle sessions, 48
// tasks of a budget of 64, hold nothing against the bound of 32, and none
// is ended.
TEST_F(SessionEndTest, IdleSessionsHoldNothingAgainstTheBound) {
  ServerProcess s(EnvWith({{"MCP_EXEC_MAX_PROCESSES", "64"}, {"MCP_EXEC_MAX_PY_SESSIONS", "16"}}));
  s.Initialize();
  constexpr int kSessions = 16;
  for (int i = 0; i < kSessions; ++i) {
    ASSERT_EQ(s.Exec("x = 1", {{"session", "s" + std::to_string(i)}})["exit_code"], 0);
  }
  usleep(2500 * 1000);  // the zygote looks once a second
  for (int i = 0; i < kSessions; ++i) {
    json r = s.Exec("print(x)", {{"session", "s" + std::to_string(i)}});
    EXPECT_EQ(r["session_new"], false) << i << ": " << r.dump();
  }
}

// Issue 19, point 2 (SessionBoundTest.ChildrenASessionHoldsCannotStarveOtherRuns
// holds it in the three postures): the bound during a cell ends the session,
// and the call says why, with the number.
TEST_F(SessionEndTest, ACellHoldingTooManyProcessesIsToldWhyItsSessionEnded) {
  ServerProcess s(EnvWith({{"MCP_EXEC_MAX_PROCESSES", "64"}}));
  s.Initialize();
  json r = s.Exec(R"(
import os, time
for _ in range(40):
    if os.fork() == 0:
        time.sleep(600)
        os._exit(0)
time.sleep(20)
print("not reached")
)",
                  {{"session", "hog"}, {"timeout_s", 30}});
  EXPECT_EQ(r["stdout"], "") << r.dump();
  ASSERT_TRUE(r.contains("session_ended")) << r.dump();
  EXPECT_NE(r["session_ended"].get<std::string>().find(
                "held more than half of MCP_EXEC_MAX_PROCESSES (32 processes and threads"),
            std::string::npos)
      << r.dump();
  EXPECT_LT(r["duration_ms"].get<int64_t>(), 15000) << r.dump();
}

// Issue 19, point 3: a cell can take over the later calls of its own
// session (here by replacing the runtime's execute function; taking the
// cell socket does the same), which SECURITY.md called a mere stall. The
// interpreter that runs the code must receive its calls, so this cannot be
// taken from it: the trust model is stated instead (a session is one
// principal's state; reset after untrusted input), and it reaches no other
// session and no one-shot run.
TEST_F(SessionEndTest, ACellRulesItsOwnSessionOnlyAndTheDescriptionSaysSo) {
  ServerProcess s(EnvWith({}));
  s.Initialize();
  json taken = s.Exec(R"(
import mcp_exec_runtime as rt
def forged(code, main, filename="main.py"):
    print("forged")
rt.runner._execute = forged  # where a cell's run looks it up
)",
                      {{"session", "taken"}});
  ASSERT_EQ(taken["exit_code"], 0) << taken.dump();
  EXPECT_EQ(s.Exec("print('real')", {{"session", "taken"}})["stdout"], "forged\n");
  EXPECT_EQ(s.Exec("print('real')", {{"session", "other"}})["stdout"], "real\n");
  EXPECT_EQ(s.Exec("print('real')")["stdout"], "real\n");
  json reset = s.Exec("print('real')", {{"session", "taken"}, {"reset", true}});
  EXPECT_EQ(reset["stdout"], "real\n") << reset.dump();
  json tools = s.Request("tools/list", json::object());
  std::string d = tools["result"]["tools"][0]["description"];
  EXPECT_NE(d.find("A session is one principal's state"), std::string::npos) << d;
  EXPECT_NE(d.find("call with reset after running code or data you do not trust"),
            std::string::npos)
      << d;
}

TEST_F(SessionEndTest, IdleExpiryEndsIt) {
  ServerProcess s(EnvWith({{"MCP_EXEC_PY_SESSION_IDLE_S", "1"}}));
  s.Initialize();
  std::string marker = StartMarked(s, "a");
  EXPECT_TRUE(Gone(marker));
  EXPECT_TRUE(WaitUntil([&] { return RunDirs() == 0; }, 5000));
  // The name starts afresh: the NameError this gives comes with its cause.
  json r = s.Exec("print(x)", {{"session", "a"}});
  EXPECT_EQ(r["session_new"], true) << r.dump();
  EXPECT_NE(r["stderr"].get<std::string>().find("NameError"), std::string::npos) << r.dump();
  EXPECT_EQ(r["session_restarted"], "no call for 1 s (MCP_EXEC_PY_SESSION_IDLE_S)") << r.dump();
  r = s.Exec("print(1)", {{"session", "a"}});
  EXPECT_FALSE(r.contains("session_restarted")) << "said once: " << r.dump();
}

TEST_F(SessionEndTest, LongestLifeEndsIt) {
  ServerProcess s(EnvWith({{"MCP_EXEC_PY_SESSION_MAX_S", "10"}}));
  s.Initialize();
  std::string marker = StartMarked(s, "a");
  EXPECT_FALSE(PidsWithCmdlineContaining(marker).empty());
  EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdlineContaining(marker).empty(); }, 20000));
  EXPECT_TRUE(WaitUntil([&] { return RunDirs() == 0; }, 5000));
  EXPECT_TRUE(s.StderrHas("\"reason\":\"lifetime\"")) << s.Stderr();
}

TEST_F(SessionEndTest, StdioEofEndsItWithTheServer) {
  ServerProcess s(EnvWith({{"MCP_EXEC_SHUTDOWN_GRACE_S", "1"}}));
  s.Initialize();
  std::string marker = StartMarked(s, "a");
  s.CloseStdin();
  EXPECT_EQ(s.Wait(20000), 0);
  EXPECT_TRUE(Gone(marker));
  EXPECT_EQ(RunDirs(), 0);
  EXPECT_TRUE(s.StderrHas("\"reason\":\"connection_closed\"")) << s.Stderr();
}

TEST_F(SessionEndTest, SigtermEndsIt) {
  ServerProcess s(EnvWith({}));
  s.Initialize();
  std::string marker = StartMarked(s, "a");
  kill(s.pid(), SIGTERM);
  EXPECT_EQ(s.Wait(30000), 0);
  EXPECT_TRUE(Gone(marker));
  EXPECT_EQ(RunDirs(), 0);
}

TEST_F(SessionEndTest, ItsInterpreterDyingEndsIt) {
  ServerProcess s(EnvWith({}));
  s.Initialize();
  std::string marker = StartMarked(s, "a");
  json r = s.Exec("import os\nos._exit(3)", {{"session", "a"}});
  EXPECT_EQ(r["exit_code"], 3) << r.dump();
  EXPECT_EQ(r["session_ended"], "its interpreter exited with status 3") << r.dump();
  EXPECT_TRUE(Gone(marker));
  EXPECT_TRUE(WaitUntil([&] { return RunDirs() == 0; }, 5000));
  EXPECT_EQ(s.Exec("print(1)", {{"session", "a"}})["session_new"], true);
}

TEST_F(SessionEndTest, ACellIgnoringTheInterruptEndsIt) {
  ServerProcess s(EnvWith({{"MCP_EXEC_PY_SESSION_INTERRUPT_MS", "300"}}));
  s.Initialize();
  std::string marker = StartMarked(s, "a");
  json r = s.Exec("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
                  {{"session", "a"}, {"timeout_s", 1}});
  EXPECT_EQ(r["timed_out"], true) << r.dump();
  EXPECT_EQ(r["session_ended"],
            "its cell did not stop within 300 ms of KeyboardInterrupt (after its 1 s timeout), "
            "so its interpreter was killed")
      << r.dump();
  EXPECT_TRUE(Gone(marker));
  EXPECT_TRUE(WaitUntil([&] { return RunDirs() == 0; }, 5000));
}

TEST_F(SessionEndTest, ATimeoutInterruptsAndKeepsEverything) {
  ServerProcess s(EnvWith({}));
  s.Initialize();
  std::string marker = StartMarked(s, "a");
  json r = s.Exec("import time\nx = 5\ntime.sleep(60)", {{"session", "a"}, {"timeout_s", 1}});
  EXPECT_EQ(r["timed_out"], true) << r.dump();
  EXPECT_EQ(r["exit_code"], -1);
  EXPECT_NE(r["stderr"].get<std::string>().find("KeyboardInterrupt"), std::string::npos);
  EXPECT_FALSE(r.contains("session_ended")) << r.dump();
  json after = s.Exec("print(x, open('state.txt').read(), child.poll())", {{"session", "a"}});
  EXPECT_EQ(after["stdout"], "5 kept None\n") << after.dump();
  EXPECT_FALSE(PidsWithCmdlineContaining(marker).empty()) << "its child lives on";
}

TEST_F(SessionEndTest, AnIdleSessionHoldsNoSlot) {
  ServerProcess s(EnvWith({{"MCP_EXEC_MAX_CONCURRENT", "1"}, {"MCP_EXEC_MAX_QUEUE", "0"}}));
  s.Initialize();
  StartMarked(s, "a");
  StartMarked(s, "b");
  // With one slot and no queue, a call that had to wait would be refused.
  json r = s.Call({{"code", "print('one-shot')"}});
  EXPECT_FALSE(r.value("isError", false)) << r.dump();
  EXPECT_EQ(s.Exec("print(open('state.txt').read())", {{"session", "a"}})["stdout"], "kept\n");
}

// Issue 26, point 4: a full pool ends its least recently used idle session
// for a newcomer (a name starts afresh next time, a handle is refused saying
// it was evicted); only when every session has a call running is a new one
// refused, with the limit and what to do.
TEST_F(SessionEndTest, AFullPoolEndsItsLeastRecentlyUsedIdleSession) {
  ServerProcess s(EnvWith({{"MCP_EXEC_MAX_PY_SESSIONS", "2"}}));
  s.Initialize();
  json handle = s.Exec("x = 1", {{"session", "new"}});
  s.Exec("x = 2", {{"session", "b"}});
  json c = s.Exec("print('c')", {{"session", "c"}});
  EXPECT_EQ(c["stdout"], "c\n") << c.dump();
  EXPECT_EQ(c["session_new"], true);
  EXPECT_TRUE(s.StderrHas("\"reason\":\"evicted\"")) << s.Stderr();
  // The handle's session was the oldest: its next call learns why.
  json gone = s.Call({{"code", "print(x)"}, {"session", handle["session"]}});
  EXPECT_TRUE(gone.value("isError", false)) << gone.dump();
  std::string why = gone["content"][0]["text"];
  EXPECT_NE(why.find("evicted"), std::string::npos) << why;
  EXPECT_NE(why.find("MCP_EXEC_MAX_PY_SESSIONS"), std::string::npos) << why;
  // b kept its state; asking for a then evicts c (now the oldest), and a
  // starts afresh.
  EXPECT_EQ(s.Exec("print(x)", {{"session", "b"}})["stdout"], "2\n");
  json a = s.Exec("print('x' in globals())", {{"session", "a"}});
  EXPECT_EQ(a["stdout"], "False\n");
  EXPECT_EQ(a["session_new"], true);
  EXPECT_EQ(s.Exec("print(x)", {{"session", "b"}})["stdout"], "2\n");
}

TEST_F(SessionEndTest, AFullPoolOfBusySessionsRefusesSayingWhatToDo) {
  ServerProcess s(EnvWith({{"MCP_EXEC_MAX_PY_SESSIONS", "2"}}));
  s.Initialize();
  // Both sessions busy (a session is busy from its start log on); the
  // refusal comes at once, well inside their 6 s.
  const std::string wait_code = "import time\ntime.sleep(6)\nprint('done')";
  s.SendCall(901, {{"code", wait_code}, {"session", "a"}});
  s.SendCall(902, {{"code", wait_code}, {"session", "b"}});
  ASSERT_TRUE(s.StderrHas("\"live\":2", 20000)) << s.Stderr();
  json r = s.Call({{"code", "print(1)"}, {"session", "c"}}, 10000);
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  std::string text = r["content"][0]["text"];
  EXPECT_NE(text.find("MCP_EXEC_MAX_PY_SESSIONS=2"), std::string::npos) << text;
  EXPECT_NE(text.find("session \"c\""), std::string::npos) << text;
  EXPECT_NE(text.find("Retry when a call ends"), std::string::npos) << text;
  EXPECT_NE(text.find("without `session`"), std::string::npos) << text;
  // A one-shot call still runs meanwhile.
  EXPECT_EQ(s.Exec("print(3)")["stdout"], "3\n");
  EXPECT_EQ(s.WaitForId(901)["result"]["structuredContent"]["stdout"], "done\n");
  EXPECT_EQ(s.WaitForId(902)["result"]["structuredContent"]["stdout"], "done\n");
  // Now idle, one gives way.
  EXPECT_EQ(s.Exec("print('c')", {{"session", "c"}})["stdout"], "c\n");
}

TEST_F(SessionEndTest, MemoryHoldsForTheSessionAsAWhole) {
  ServerProcess s(EnvWith({{"MCP_EXEC_MEMORY_LIMIT_MB", "256"}}));
  s.Initialize();
  // 160 MiB kept by the first cell; 160 more in the second passes the limit.
  json first = s.Exec("keep = bytearray(160 * 1024 * 1024)\nprint('ok')", {{"session", "a"}});
  EXPECT_EQ(first["stdout"], "ok\n") << first.dump();
  json second = s.Exec("more = bytearray(160 * 1024 * 1024)", {{"session", "a"}});
  EXPECT_EQ(second["reason"], "memory") << second.dump();
  // The session lives on (a MemoryError is an exception like another).
  json third = s.Exec("print(len(keep) // 2**20)", {{"session", "a"}});
  EXPECT_EQ(third["stdout"], "160\n") << third.dump();
  EXPECT_EQ(third["session_new"], false);
}

TEST_F(SessionEndTest, CpuTimeIsPerCall) {
  ServerProcess s(EnvWith({}));
  s.Initialize();
  // Each cell's soft RLIMIT_CPU is what the interpreter used so far plus the
  // cell's timeout and the 5 s slack; the hard limit is the session's budget.
  const char* code =
      "import resource, time\n"
      "t0 = time.process_time()\n"
      "while time.process_time() - t0 < 0.3: pass\n"
      "soft, hard = resource.getrlimit(resource.RLIMIT_CPU)\n"
      "print(round(soft - time.process_time()), hard)";
  json one = s.Exec(code, {{"session", "a"}, {"timeout_s", 7}});
  json two = s.Exec(code, {{"session", "a"}, {"timeout_s", 20}});
  // 12 or 13 (the 1 s rounding up of the time used); 14405 = 14400 + slack.
  EXPECT_TRUE(one["stdout"] == "12 14405\n" || one["stdout"] == "13 14405\n") << one.dump();
  EXPECT_TRUE(two["stdout"] == "25 14405\n" || two["stdout"] == "26 14405\n") << two.dump();
}

}  // namespace
}  // namespace mcpexec::testing
