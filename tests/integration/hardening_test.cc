// Regressions of the outside security review (issue 13) that show through
// the stdio transport: the status channel, the end of a run, shutdown,
// cancellation in the queue, tracebacks, validation slips, fresh secrets.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>

#include "ipc/zygote_args.h"
#include "server_process.h"

namespace mcpexec::testing {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MillisSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// The record the runner used to write on fd 1000 (status, reason, two
// timings), which the supervisor trusted; and a fake of today's verdict.
const char kForgeReport[] = R"(
import os, struct, time
for record in (struct.pack("iiii", 0, 0, 0, 0), struct.pack("IIii240s", 0x4d435856, 1, 0, 0, b"")):
    try:
        os.write(1000, record)
    except OSError:
        pass  # the supervisor closed its end: it reads no more than its bound
os.close(1)
os.close(2)
time.sleep(60)
)";

// MCP_EXEC_SANDBOX_UID: a server started as root makes its runs that uid and
// gid, with no supplementary groups, and its runs' working directory theirs.
TEST(SandboxUidTest, RunsBecomeTheConfiguredUid) {
  if (geteuid() != 0) GTEST_SKIP() << "only a server started as root changes its runs' uid";
  const std::string uid = std::to_string(20000000 + getpid());
  ServerProcess s({{"MCP_EXEC_SANDBOX_UID", uid}});
  s.Initialize();
  EXPECT_EQ(s.sandbox_uid(), static_cast<uid_t>(std::stoul(uid)));
  json r = s.Exec(
      "import os\n"
      "print(os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups(), "
      "os.stat('.').st_uid)");
  EXPECT_EQ(r["stdout"], uid + " " + uid + " " + uid + " " + uid + " [] " + uid + "\n") << r;
}

// Tests with a configuration of their own start a server of their own;
// the others share the suite's.
class StatusChannelTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { shared_.Release(); }
  static SharedServer shared_;
};
SharedServer StatusChannelTest::shared_;

TEST_F(StatusChannelTest, AForgedReportDoesNotEndTheCallBeforeItsDeadline) {
  ServerProcess& s = shared_.Get();
  auto t0 = Clock::now();
  json r = s.Exec(kForgeReport, {{"timeout_s", 2}});
  EXPECT_EQ(r["timed_out"], true) << r.dump();
  EXPECT_EQ(r["exit_code"], -1);
  EXPECT_GE(MillisSince(t0), 1900) << "answered before the deadline: " << r.dump();
  EXPECT_LT(MillisSince(t0), 9000);
}

TEST_F(StatusChannelTest, ForgedCallsAllEndAtTheirDeadlinesInParallel) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_CONCURRENT", "5"}});
  s.Initialize();
  auto t0 = Clock::now();
  std::vector<json> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(s.NextId());
    s.SendCall(ids.back(), {{"code", kForgeReport}, {"timeout_s", 2}});
  }
  for (const json& id : ids) {
    json r = s.WaitForId(id, 30000);
    EXPECT_EQ(r["result"]["structuredContent"]["timed_out"], true) << r.dump();
  }
  // Five deadlines of 2 s, killed together: never one cleanup after another.
  EXPECT_LT(MillisSince(t0), 8000);
  // At most the spares (kMaxSpares) and one runner still being reaped.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return ChildrenOf(s.ZygotePid(), false).size() <= static_cast<size_t>(kMaxSpares) + 1;
      },
      5000))
      << "only spares are left";
  // The slots are free again: a call runs at once.
  EXPECT_EQ(s.Exec("print('free')")["stdout"], "free\n");
}

TEST_F(StatusChannelTest, AForgedLockdownFailureIsNotAToolError) {
  ServerProcess& s = shared_.Get();
  // The old "lockdown failed" record, and a verdict saying the same.
  json r = s.Call({{"code", R"(
import os, struct, sys
for record in (struct.pack("iiii", 125, 2, 0, 0),
               struct.pack("IIii240s", 0x4d435856, 0, 0, 0, b"forged by the run")):
    try:
        os.write(1000, record)
    except OSError:
        pass
sys.stderr.write("mcp-exec: sandbox lockdown failed: forged\n")
print("still mine")
)"}});
  EXPECT_EQ(r.value("isError", false), false) << r.dump();
  EXPECT_EQ(r["structuredContent"]["exit_code"], 0);
  EXPECT_EQ(r["structuredContent"]["stdout"], "still mine\n");
}

TEST_F(StatusChannelTest, TheExitStatusComesFromTheWaitStatus) {
  ServerProcess& s = shared_.Get();
  // A report claiming status 0, then exit 7: the answer says 7.
  json r =
      s.Exec("import os, struct\nos.write(1000, struct.pack('iiii', 0, 0, 0, 0))\nos._exit(7)");
  EXPECT_EQ(r["exit_code"], 7) << r.dump();
  // A forged memory note on a run that exits 0 is not believed.
  r = s.Exec("import os, struct\nos.write(1000, struct.pack('II', 0x4d43584e, 1))\nprint('x')");
  EXPECT_EQ(r["exit_code"], 0);
  EXPECT_FALSE(r.contains("reason")) << r.dump();
}

TEST_F(StatusChannelTest, EndlessWritesToTheStatusPipeAreNotBuffered) {
  ServerProcess& s = shared_.Get();
  s.Exec("print(1)");
  long before = RssKiB(s.pid());
  json r = s.Exec(R"(
import os
chunk = b"x" * 65536
written = 0
try:
    while written < 200 * 2**20:
        written += os.write(1000, chunk)
    print("all", written)
except OSError as e:
    print("refused after", written, e.errno)
)",
                  {{"timeout_s", 20}});
  EXPECT_EQ(r["stdout"].get<std::string>().rfind("refused after", 0), 0u) << r.dump();
  long after = RssKiB(s.pid());
  EXPECT_LT(after - before, 16 * 1024) << "supervisor RSS " << before << " -> " << after << " KiB";
}

TEST(ShutdownTest, SigtermAnswersTheRunningCallWithItsOutputSoFar) {
  for (int sig : {SIGTERM, SIGINT}) {
    ServerProcess s(Env{{"MCP_EXEC_MAX_CONCURRENT", "1"}, {"MCP_EXEC_MAX_QUEUE", "2"}});
    s.Initialize();
    json running = s.NextId(), queued = s.NextId();
    std::string m = Marker("4600");
    s.SendCall(running, {{"code",
                          "import subprocess\nprint('so far', flush=True)\n"
                          "subprocess.run(['sleep', '" +
                              m + "'])"}});
    ASSERT_TRUE(WaitUntil([&] { return !PidsWithCmdlineContaining(m).empty(); }, 20000));
    s.SendCall(queued, {{"code", "print('never')"}});
    usleep(200000);
    kill(s.pid(), sig);
    json a = s.WaitForId(running, 15000);
    ASSERT_TRUE(a.contains("result")) << a.dump();
    EXPECT_EQ(a["result"]["isError"], false) << a.dump();
    EXPECT_EQ(a["result"]["structuredContent"]["reason"], "shutdown");
    EXPECT_EQ(a["result"]["structuredContent"]["stdout"], "so far\n");
    EXPECT_EQ(a["result"]["structuredContent"]["exit_code"], -1);
    json b = s.WaitForId(queued, 15000);
    EXPECT_EQ(b["result"]["isError"], true) << b.dump();
    EXPECT_NE(b["result"]["content"][0]["text"].get<std::string>().find("shutting down"),
              std::string::npos);
    EXPECT_EQ(s.Wait(15000), 0) << "signal " << sig;
    EXPECT_TRUE(PidsWithCmdlineContaining(m).empty());
  }
}

TEST(ShutdownTest, EofAnswersTheRunningCallPastTheGrace) {
  ServerProcess s(Env{{"MCP_EXEC_SHUTDOWN_GRACE_S", "1"}});
  s.Initialize();
  json id = s.NextId();
  std::string m = s.StartSleepingRun(id, "4700");
  ASSERT_FALSE(m.empty());
  s.CloseStdin();
  json a = s.WaitForId(id, 15000);
  EXPECT_EQ(a["result"]["structuredContent"]["reason"], "shutdown") << a.dump();
  EXPECT_EQ(s.Wait(15000), 0);
}

TEST(QueueTest, ACancelledQueuedCallFreesItsPlaceAtOnce) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_CONCURRENT", "1"}, {"MCP_EXEC_MAX_QUEUE", "1"}});
  s.Initialize();
  json running = s.NextId(), queued = s.NextId();
  s.SendCall(running, {{"code", "import time; time.sleep(3)"}});
  usleep(300000);
  s.SendCall(queued, {{"code", "print('queued')"}});
  usleep(200000);
  s.Send({{"jsonrpc", "2.0"},
          {"method", "notifications/cancelled"},
          {"params", {{"requestId", queued}, {"reason", "test"}}}});
  usleep(200000);
  // The queue has room again while the first call still runs.
  json later = s.Call({{"code", "print('later')"}}, 20000);
  EXPECT_EQ(later.value("isError", false), false) << later.dump();
  EXPECT_EQ(later["structuredContent"]["stdout"], "later\n");
  EXPECT_EQ(s.WaitForId(running)["result"]["structuredContent"]["exit_code"], 0);
}

// What `python3 main.py` prints for the same file.
std::string Python3Traceback(const std::string& code) {
  char dir[] = "/tmp/mcp-exec-tb-XXXXXX";
  if (!mkdtemp(dir)) return "";
  std::string d = dir;
  std::ofstream(d + "/main.py") << code;
  std::string cmd = "cd " + d + " && /usr/bin/python3 main.py 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  unlink((d + "/main.py").c_str());
  rmdir(d.c_str());
  // python3 names the file by its absolute path; a run's file is main.py.
  for (size_t at; (at = out.find(d + "/")) != std::string::npos;) out.erase(at, d.size() + 1);
  return out;
}

TEST(TracebackTest, CaretsAreWherePython3PutsThem) {
  ServerProcess s;
  s.Initialize();
  for (std::string code : {"print(2); foo(1)", "x = 1\nprint(2); foo(1)",
                           "s = '\f'\nx = 1\n\n  # \xE2\x80\xA8\nprint(2); foo(1)",
                           "y = {'a': 1}\ny['a'] + y['b']", "print(2); foo(1)\n"}) {
    json r = s.Exec(code);
    std::string expected = Python3Traceback(code);
    // python3 prints "2\n" first on the same stream; ours is on stdout.
    ASSERT_EQ(expected.rfind("2\n", 0) == 0 ? "2\n" : "", r["stdout"]) << code;
    if (expected.rfind("2\n", 0) == 0) expected = expected.substr(2);
    EXPECT_EQ(r["stderr"], expected) << "code: " << code;
  }
}

TEST(ValidationTest, UnicodeWhitespaceIsEmptyAndNullIsAWrongType) {
  ServerProcess s;
  s.Initialize();
  json r = s.Call({{"code", "\v\f\r \xC2\x85\xC2\xA0\xE3\x80\x80"}});
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["content"][0]["text"], "code must not be empty");
  for (const char* arg : {"stdin", "timeout_s"}) {
    r = s.Call({{"code", "print(1)"}, {arg, nullptr}});
    EXPECT_EQ(r["isError"], true) << arg;
    EXPECT_NE(r["content"][0]["text"].get<std::string>().find(arg), std::string::npos) << r.dump();
  }
}

TEST(FreshSecretsTest, MultiprocessingAuthkeyDiffersInEveryRun) {
  ServerProcess s;
  s.Initialize();
  std::string code =
      "import multiprocessing\nprint(multiprocessing.current_process().authkey.hex())";
  std::string a = s.Exec(code)["stdout"], b = s.Exec(code)["stdout"];
  EXPECT_EQ(a.size(), 65u) << a;
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace mcpexec::testing

namespace mcpexec::testing {
namespace {

// The folder below which the server makes its runs' memory cgroups, from the
// layer it logs at start; "" when the layer is off (with why in *detail).
std::string RunCgroupParent(ServerProcess& s, std::string* detail) {
  s.StderrHas("\"event\":\"sandbox_layers\"");
  std::string err = s.Stderr();
  for (size_t at = 0; (at = err.find("\"event\":\"sandbox_layers\"", at)) != std::string::npos;
       ++at) {
    size_t start = err.rfind('\n', at);
    size_t end = err.find('\n', at);
    json line =
        json::parse(err.substr(start == std::string::npos ? 0 : start + 1,
                               end == std::string::npos ? std::string::npos : end - start - 1));
    for (const json& l : line["layers"]) {
      if (l["name"] != "cgroup") continue;
      *detail = l["detail"];
      if (!l["active"].get<bool>()) return "";
      std::string d = *detail;
      size_t b = d.find("below ");
      if (b == std::string::npos) return "";
      size_t e = d.find(':', b);
      return d.substr(b + 6, e - b - 6);
    }
  }
  return "";
}

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

TEST(CgroupTest, EachRunIsInACgroupOfItsOwnRemovedWithIt) {
  std::string parent, detail;
  {
    ServerProcess s(Env{{"MCP_EXEC_LOG_LEVEL", "debug"}});  // the layers' details
    s.Initialize();
    parent = RunCgroupParent(s, &detail);
    if (parent.empty()) {
      GTEST_SKIP() << "no per-run cgroup on this host: " << detail;
    }
    ASSERT_TRUE(IsDir(parent)) << parent;
    std::string out = s.Exec("print(open('/proc/self/cgroup').read())")["stdout"];
    size_t at = out.find("/mcp-exec-");
    ASSERT_NE(at, std::string::npos) << out;
    std::string leaf = out.substr(out.find('/', at + 1) + 1);
    leaf = leaf.substr(0, leaf.find('\n'));
    EXPECT_EQ(leaf[0], 'r') << out;
    // The run's cgroup goes with the run (only the spares' are left).
    EXPECT_TRUE(WaitUntil([&] { return !IsDir(parent + "/" + leaf); }, 5000))
        << parent << "/" << leaf;
    // The limit is the run's memory limit (512 MiB by default).
    std::string probe = s.Exec(
        "import re\n"
        "line = [l for l in open('/proc/self/cgroup') if ':memory:' in l][0]\n"
        "print(line.strip().split(':')[2])")["stdout"];
    EXPECT_NE(probe.find("/mcp-exec-"), std::string::npos) << probe;
    s.CloseStdin();
    EXPECT_EQ(s.Wait(15000), 0);
  }
  EXPECT_FALSE(IsDir(parent)) << "the server's cgroup parent outlived it: " << parent;
}

// A default above the maximum is a start error now (issue 26, point 8;
// RoughEdgesTest.SettingsThatCannotWorkAreStartErrors), no longer clamped
// with a warning.
TEST(DescriptionTest, StatesTheEffectiveDefaultTimeout) {
  ServerProcess s(Env{{"MCP_EXEC_DEFAULT_TIMEOUT_S", "90"},
                      {"MCP_EXEC_MAX_TIMEOUT_S", "120"},
                      {"MCP_EXEC_MEMORY_LIMIT_MB", "300"}});
  s.Initialize();
  json tools = s.Request("tools/list", json::object());
  std::string d = tools["result"]["tools"][0]["description"];
  EXPECT_NE(d.find("defaults to 90 s"), std::string::npos) << d;
  EXPECT_NE(d.find("capped at 120 s"), std::string::npos) << d;
  EXPECT_NE(d.find("memory 300 MiB"), std::string::npos) << d;
}

// Two runs at once: what one holds must be invisible and untouchable for the
// other (the review's findings, reproduced with a real neighbour).
TEST(ConcurrentRunsTest, ARunSeesNoneOfItsNeighboursProcessesOrSocketNames) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_CONCURRENT", "2"}});
  s.Initialize();
  std::string marker = Marker("4800");
  json neighbour = s.NextId();
  s.SendCall(neighbour, {{"code",
                          "import socket, subprocess\n"
                          "s = socket.socket(socket.AF_UNIX)\n"
                          "s.bind(b'\\0mcp-neighbour-name')\n"
                          "subprocess.run(['sleep', '" +
                              marker + "'])"},
                         {"timeout_s", 20}});
  ASSERT_TRUE(WaitUntil([&] { return !PidsWithCmdlineContaining(marker).empty(); }, 20000));
  json r = s.Exec(R"(
import errno, os, socket
me = os.getpid()
seen, touched = [], []
for pid in range(1, 5000):
    if pid == me or (pid == 1 and me == 2):
        continue
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b")" +
                  marker + R"(" in f.read():
                seen.append(pid)
    except OSError:
        pass
    for call in (lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
                 lambda: os.sched_setaffinity(pid, {0})):
        try:
            call()
            touched.append(pid)
        except OSError:
            pass
with open("/proc/net/unix") as f:
    names = f.read()
s = socket.socket(socket.AF_UNIX)
try:
    s.bind(b"\0mcp-neighbour-name")
    squat = "bound"
except OSError as e:
    squat = errno.errorcode[e.errno]
print("seen", seen, "touched", touched, "listed", "mcp-neighbour-name" in names, "squat", squat)
)");
  std::string out = r["stdout"];
  EXPECT_NE(out.find("seen [] touched [] listed False squat bound"), std::string::npos) << r.dump();
  s.Send({{"jsonrpc", "2.0"},
          {"method", "notifications/cancelled"},
          {"params", {{"requestId", neighbour}, {"reason", "test"}}}});
  EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdlineContaining(marker).empty(); }, 10000));
}

}  // namespace
}  // namespace mcpexec::testing
