// The escape suite: every tests/escape/*.py snippet, run through the built
// server over MCP, with two host folders mounted, in three postures, against the expectation in its
// header (see tests/escape/README.md), once as a one-shot run and once inside a Python session
// (after a first cell ran there). After each snippet the server must still answer and nothing the
// snippet started may be left alive.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "ipc/zygote_args.h"
#include "postures.h"
#include "server_process.h"

namespace mcpexec::testing {
namespace {

struct Case {
  std::string file;
  std::string name;
  std::string code;
  std::string expect = "pass";
  std::string posture;  // "" = every posture; else a space-separated list
  std::string stdin_data;
  int timeout_s = 20;
  int runs = 1;
  std::string prelude;    // tests/escape/_prelude_<name>.py goes in front
  bool distinct = false;  // lines starting "DISTINCT " must differ between repeats
  std::string skip_why;   // why the other postures cannot have the layer
  // In a session, the zygote may end the session instead (its bound on the
  // processes sessions hold): session_ended then must name this.
  std::string session_end;
  // Code mode: the server fronts server-everything (tests/upstreams) as the
  // stdio upstream "everything", so that the snippet can attack the channel.
  bool upstreams = false;
};

// The channel snippets' upstream: server-everything from tests/upstreams,
// where every posture can read it. The container postures have a /tmp of
// their own, so a checkout under /tmp lends a copy kept in /var/tmp.
std::string UpstreamsDir() {
  const std::string dir = MCP_EXEC_UPSTREAMS_DIR;
  if (dir.rfind("/tmp/", 0) != 0) return dir;
  const std::string copy =
      "/var/tmp/mcp-exec-escape-upstreams-" + std::to_string(std::hash<std::string>{}(dir));
  if (access((copy + "/node_modules/.package-lock.json").c_str(), R_OK) != 0) {
    // Copied under a name of this process's own and renamed into place
    // whole, unless another test process got there first: a copy in use is
    // never removed under its upstream.
    const std::string part = copy + ".part." + std::to_string(getpid());
    const std::string cmd = "rm -rf '" + part + "' && cp -a '" + dir + "' '" + part +
                            "' && { mv -T '" + part + "' '" + copy + "' 2>/dev/null || rm -rf '" +
                            part + "'; }";
    EXPECT_EQ(system(cmd.c_str()), 0) << cmd;
  }
  return copy;
}

// The upstreams file of the channel snippets: server-everything over stdio,
// two tools allowed; one per checkout (beside the copy above), written whole.
std::string UpstreamsFile() {
  const std::string dir = UpstreamsDir();
  const std::string js =
      dir + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
  EXPECT_EQ(access(js.c_str(), R_OK), 0)
      << js << " is missing: run `npm ci` in tests/upstreams (scripts/test.sh does)";
  // Outside /tmp: the container postures have a /tmp of their own.
  const std::string path = "/var/tmp/mcp-exec-escape-upstreams-" +
                           std::to_string(std::hash<std::string>{}(MCP_EXEC_UPSTREAMS_DIR)) +
                           ".json";
  const std::string text =
      nlohmann::json{{"mcpServers",
                      {{"everything",
                        {{"command", "node"},
                         {"args", {js, "stdio"}},
                         {"env", {{"ESCAPE_UPSTREAM_SECRET", "the-upstream-secret"}}},
                         {"allow", {"echo", "get-sum"}}}}}}}
          .dump();
  const std::string tmp = path + "." + std::to_string(getpid());
  std::ofstream(tmp) << text;
  chmod(tmp.c_str(), 0644);
  rename(tmp.c_str(), path.c_str());
  return path;
}

Case LoadCase(const std::string& file) {
  Case c;
  c.file = file;
  c.name = file.substr(0, file.size() - 3);
  std::ifstream f(std::string(ESCAPE_DIR) + "/" + file);
  std::stringstream ss;
  ss << f.rdbuf();
  c.code = ss.str();
  std::istringstream lines(c.code);
  std::string line;
  while (std::getline(lines, line) && line.rfind("#", 0) == 0) {
    auto value = [&](const char* key) -> std::optional<std::string> {
      std::string k = std::string("# ") + key + ":";
      if (line.rfind(k, 0) != 0) return std::nullopt;
      std::string v = line.substr(k.size());
      v.erase(0, v.find_first_not_of(' '));
      return v;
    };
    if (auto v = value("expect")) c.expect = *v;
    if (auto v = value("timeout")) c.timeout_s = std::stoi(*v);
    if (auto v = value("posture")) c.posture = *v;
    if (auto v = value("stdin")) c.stdin_data = *v;
    if (auto v = value("repeat")) c.runs = std::stoi(*v);
    if (auto v = value("prelude")) c.prelude = *v;
    if (auto v = value("distinct")) c.distinct = !v->empty();
    if (auto v = value("skip-why")) c.skip_why = *v;
    if (auto v = value("session-end")) c.session_end = *v;
    if (auto v = value("upstreams")) c.upstreams = !v->empty();
  }
  if (!c.prelude.empty()) {
    // Shared helpers, put in front so that the snippet still reaches the
    // sandbox as one self-contained program.
    std::ifstream p(std::string(ESCAPE_DIR) + "/_prelude_" + c.prelude + ".py");
    std::stringstream ps;
    ps << p.rdbuf();
    c.code = ps.str() + "\n" + c.code;
  }
  return c;
}

std::vector<std::string> CaseFiles() {
  std::vector<std::string> files;
  DIR* d = opendir(ESCAPE_DIR);
  if (!d) return files;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    // _prelude_*.py and the like are shared helpers, not cases.
    if (n.size() > 3 && n[0] != '_' && n.substr(n.size() - 3) == ".py") files.push_back(n);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

struct Param {
  std::string posture;
  std::string file;
  bool session = false;  // inside a Python session, as its second cell
};

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.posture << ":" << p.file << (p.session ? " (session)" : "");
}

std::vector<Param> Params() {
  std::vector<Param> out;
  for (bool session : {false, true}) {
    for (const char* posture : {"root", "container", "docker"}) {
      for (const auto& f : CaseFiles()) out.push_back({posture, f, session});
    }
  }
  return out;
}

class EscapeTest : public ::testing::TestWithParam<Param> {};

// One server per posture, session mode and upstreams, kept for the snippets
// that follow in the same process (CTest runs the suite as one process per
// posture and mode): each snippet attacks a server that already served the
// ones before it, as a deployed server would be, and the suite costs one
// zygote warm-up per group instead of one per snippet. A snippet that fails
// takes its server with it, so that the next starts clean.
struct SharedServer {
  std::unique_ptr<ServerProcess> s;
  int sessions_opened = 0;  // the sessions the snippets opened on it
};

SharedServer& ServerFor(const Param& p, const Case& c) {
  static std::map<std::string, SharedServer> servers;
  // Where a stdio upstream may run (not the docker posture without Landlock,
  // see CodeModePostureTest), every snippet meets one beside it: its process
  // and its secrets are as much a target as the server's.
  const bool upstreams = c.upstreams || p.posture != "docker";
  const std::string key =
      p.posture + (p.session ? "/session" : "/one-shot") + (upstreams ? "/upstreams" : "");
  SharedServer& shared = servers[key];
  if (shared.s && kill(shared.s->pid(), 0) != 0) shared.s.reset();
  if (!shared.s) {
    // Each snippet's session is ended by its last call (end: true); one
    // left behind (a failed snippet) ends a second after its last call, so
    // that what it left is gone by the checks after it.
    // Every snippet runs with two host folders mounted (MCP_EXEC_MOUNTS), at
    // their host paths in every posture: the fs_mount_* snippets attack
    // them, and no other layer may be weaker for their being there.
    std::map<std::string, std::string> env = MountEnv(p.posture);
    if (p.session) env["MCP_EXEC_PY_SESSION_IDLE_S"] = "1";
    if (upstreams) env["MCP_EXEC_UPSTREAMS"] = UpstreamsFile();
    shared = SharedServer{
        std::make_unique<ServerProcess>(env, std::vector<std::string>{}, Wrapper(p.posture)), 0};
    shared.s->Initialize();
  }
  return shared;
}

int CountOf(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// Every process a run started is gone: the zygote's children are back to
// idle spares. A spare is one runner waiting for its run, under the init of
// its own pid namespace where runs have one: no deeper process exists.
bool OnlyIdleSpares(const ServerProcess& s) {
  pid_t zygote = s.ZygotePid();
  if (zygote <= 0) return false;
  for (pid_t child : ChildrenOf(zygote, false)) {
    std::vector<pid_t> below = ChildrenOf(child, false);
    if (below.size() > 1) return false;
    for (pid_t runner : below) {
      if (!ChildrenOf(runner, false).empty()) return false;
    }
  }
  return ChildrenOf(zygote, false).size() <= static_cast<size_t>(kMaxSpares);
}

TEST_P(EscapeTest, Snippet) {
  const Param& p = GetParam();
  Case c = LoadCase(p.file);
  if (!c.posture.empty() &&
      (" " + c.posture + " ").find(" " + p.posture + " ") == std::string::npos) {
    GTEST_SKIP() << c.name << " applies to the postures: " << c.posture
                 << (c.skip_why.empty() ? "" : " (" + c.skip_why + ")");
  }
  if (p.posture == "root" && geteuid() != 0) {
    GTEST_SKIP() << "the root posture needs the tests to run as root";
  }
  if (p.posture != "root" && geteuid() != 0) {
    GTEST_SKIP() << "the container posture is set up with unshare and setpriv, which needs root";
  }
  if (p.posture != "root" && access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "setpriv (util-linux) is not installed";
  }
  SharedServer& shared = ServerFor(p, c);
  ServerProcess& s = *shared.s;
  // Whatever the snippet leaves failing, the next one gets a server of its own.
  struct DropOnFailure {
    SharedServer& shared;
    ~DropOnFailure() {
      if (::testing::Test::HasFailure()) shared.s.reset();
    }
  } drop{shared};
  std::set<std::string> distinct_lines;
  for (int run = 0; run < c.runs; ++run) {
    json args = {{"code", c.code}, {"timeout_s", c.timeout_s}};
    if (!c.stdin_data.empty()) args["stdin"] = c.stdin_data;
    if (p.session) {
      // Each repeat in a session of its own, started once the one before has
      // ended (state and residue snippets check that a session leaves
      // nothing behind), the snippet as its second cell, so that the layers
      // are shown to hold after code already ran there.
      auto ended = [&] {
        return CountOf(s.Stderr(), "\"event\":\"py_session_end\"") >= shared.sessions_opened;
      };
      ASSERT_TRUE(WaitUntil(ended, 10000)) << "the session of run " << run << " did not end";
      args["session"] = "escape-" + c.name + "-" + std::to_string(run);
      ++shared.sessions_opened;
      json first = s.Call({{"code", "first_cell = True"}, {"session", args["session"]}});
      ASSERT_EQ(first["structuredContent"].value("session_new", false), true) << first.dump();
    }
    json r = s.Call(args, (c.timeout_s + 30) * 1000);
    ASSERT_FALSE(r.value("isError", false)) << r.dump();
    json out = r["structuredContent"];
    std::string report = "run " + std::to_string(run + 1) + " of " + c.name + ": " + out.dump();
    const std::string stdout_text = out["stdout"];
    EXPECT_EQ(stdout_text.find("ESCAPED"), std::string::npos) << report;
    if (c.distinct) {
      std::istringstream lines(stdout_text);
      std::string line;
      int seen = 0;
      while (std::getline(lines, line)) {
        if (line.rfind("DISTINCT ", 0) != 0) continue;
        ++seen;
        EXPECT_TRUE(distinct_lines.insert(line).second)
            << "an earlier run printed the same: " << line;
      }
      EXPECT_GT(seen, 0) << report;
    }
    if (p.session && !out.contains("session_ended")) {
      // Ended at once (end: true), not at the idle bound: the next repeat
      // and snippet need not wait for the sweep.
      json end = s.Call({{"code", "pass"}, {"session", args["session"]}, {"end", true}});
      EXPECT_NE(end["structuredContent"].value("session_ended", "").find("end: true"),
                std::string::npos)
          << end.dump();
    }
    if (p.session && !c.session_end.empty() && out.contains("session_ended")) {
      // The stronger outcome a session may have: the zygote ended it, and
      // the call says why, with the bound that was hit.
      EXPECT_EQ(out["exit_code"], -1) << report;
      EXPECT_EQ(out.value("signal", 0), 9) << report;
      EXPECT_NE(out["session_ended"].get<std::string>().find(c.session_end), std::string::npos)
          << report;
    } else if (c.expect == "pass") {
      EXPECT_EQ(out["exit_code"], 0) << report;
      EXPECT_NE(("\n" + stdout_text).find("\nPASS"), std::string::npos) << report;
    } else if (c.expect.rfind("killed ", 0) == 0) {
      EXPECT_EQ(out["exit_code"], -1) << report;
      static const std::map<std::string, int> kSignals = {
          {"SIGSYS", 31}, {"SIGKILL", 9}, {"SIGSEGV", 11}, {"SIGABRT", 6}, {"SIGXCPU", 24}};
      auto sig = kSignals.find(c.expect.substr(7));
      ASSERT_NE(sig, kSignals.end()) << "unknown signal in " << c.file << ": " << c.expect;
      EXPECT_EQ(out.value("signal", 0), sig->second) << report;
    } else if (c.expect.rfind("reason ", 0) == 0) {
      EXPECT_EQ(out.value("reason", ""), c.expect.substr(7)) << report;
    } else if (c.expect == "timed_out") {
      EXPECT_TRUE(out["timed_out"]) << report;
      EXPECT_EQ(out["exit_code"], -1) << report;
    } else {
      FAIL() << "unknown expectation in " << c.file << ": " << c.expect;
    }
  }
  EXPECT_TRUE(WaitUntil([&] { return OnlyIdleSpares(s); }, 10000))
      << "a process started by " << c.name << " outlived its run";
  // The server and the sandbox still work.
  EXPECT_EQ(s.Exec("print('still here')")["stdout"], "still here\n");
}

// The run directories below a /tmp: "mcp-exec-XXXXXX/run-YYYYYY" (the
// servers' folders, not their caches).
std::set<std::string> RunDirs(const std::string& tmp) {
  std::set<std::string> out;
  if (DIR* top = opendir(tmp.c_str())) {
    while (dirent* e = readdir(top)) {
      const std::string name = e->d_name;
      if (name.rfind("mcp-exec-", 0) != 0 || name.rfind("mcp-exec-cache-", 0) == 0) continue;
      if (DIR* d = opendir((tmp + "/" + name).c_str())) {
        while (dirent* r = readdir(d)) {
          if (std::string(r->d_name).rfind("run-", 0) == 0) out.insert(name + "/" + r->d_name);
        }
        closedir(d);
      }
    }
    closedir(top);
  }
  return out;
}

// Issue 19, point 15: the recursive removal of a run's directory stopped at
// depth 4096: in the posture without namespaces a tree 5,000 deep survived
// the run's cleanup (on the container's /tmp, memory on a tmpfs), run after
// run. The run's directory is the supervisor's, seen here through
// /proc/<server>/root (its mount namespace in the container postures).
TEST(CleanupTest, ATreeDeeperThanAnyRecursionBoundGoesWithItsRun) {
  if (auto why = PosturesMissing("the postures and /proc/<pid>/root need root"))
    GTEST_SKIP() << *why;
  for (const char* posture : {"root", "container", "docker"}) {
    SCOPED_TRACE(posture);
    // In the root posture the server's /tmp is the host's, where servers of
    // other tests come and go side by side: this one gets a workdir root of
    // its own. The container postures have a /tmp of their own.
    const bool host_tmp = std::string(posture) == "root";
    char own[] = "/tmp/mcp-exec-cleanup-test-XXXXXX";
    ASSERT_NE(mkdtemp(own), nullptr);
    std::map<std::string, std::string> env;
    if (host_tmp) env["MCP_EXEC_WORKDIR_ROOT"] = own;
    ServerProcess s(env, {}, Wrapper(posture));
    s.Initialize();
    json out = s.Exec(R"(
import os
fd = os.open(".", os.O_RDONLY)
for _ in range(5000):
    os.mkdir("d", dir_fd=fd)
    nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = nxt
print("deep")
)",
                      {{"timeout_s", 60}});
    ASSERT_EQ(out["stdout"], "deep\n") << out.dump();
    // The server's own folder, /tmp/mcp-exec-XXXXXX, holds a directory per
    // live run: none once the run's cleanup (just after its answer) is done.
    const std::string tmp =
        host_tmp ? std::string(own) : "/proc/" + std::to_string(s.pid()) + "/root/tmp";
    auto runs_left = [&] { return RunDirs(tmp).size(); };
    EXPECT_TRUE(WaitUntil([&] { return runs_left() == 0; }, 20000))
        << runs_left() << " run directories outlived their runs in " << tmp;
    s.CloseStdin();
    EXPECT_EQ(s.Wait(20000), 0);
    EXPECT_EQ(system(("rm -rf '" + std::string(own) + "'").c_str()), 0);
  }
}

// Issue 19, point 2: RLIMIT_NPROC counts every process and thread of the
// sandbox uid, so 44 sleepers a session kept between calls left a server of
// 64 processes unable to fork anywhere else for as long as the session
// lived. Sessions together may hold half the budget beyond their
// interpreters; the one holding the most gives way, and one-shot runs fork.
TEST(SessionBoundTest, ChildrenASessionHoldsCannotStarveOtherRuns) {
  if (auto why = PosturesMissing("the postures need root")) GTEST_SKIP() << *why;
  for (const char* posture : {"root", "container", "docker"}) {
    SCOPED_TRACE(posture);
    ServerProcess s({{"MCP_EXEC_MAX_PROCESSES", "64"}}, {}, Wrapper(posture));
    s.Initialize();
    json held = s.Exec(R"(
import os, time
pids = []
for _ in range(44):
    pid = os.fork()
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    pids.append(pid)
print(len(pids), "held")
)",
                       {{"session", "hog"}});
    // Two correct mechanisms race: the cell forks all 44 and its end's count
    // ends the session, or (on a slow day, forking 44 took over a second)
    // the zygote's once-a-second watch ends it mid-cell. Either way the
    // session holding them is gone, and says why.
    if (held["exit_code"] == 0) {
      EXPECT_EQ(held["stdout"], "44 held\n") << held.dump();
    } else {
      EXPECT_NE(held.value("session_ended", "").find("held the most"), std::string::npos)
          << held.dump();
    }
    // A one-shot run needs 30 of the 64: with the 44 held, fork fails with
    // EAGAIN.
    json r = ForkInARun(s, 30);
    EXPECT_EQ(r["stdout"], "30 forked\n") << r.dump();
    // The zygote ends the session on its next once-a-second pass; the
    // supervisor learns of it when the interpreter is reaped. A call that
    // reaches the session between the two is told that it ended, and why
    // (CI saw it once in ~30 runs); the call after that gets a new one.
    json next = s.Exec("print('again')", {{"session", "hog"}});
    if (next["session_new"] == false) {
      EXPECT_NE(next.value("session_ended", "").find("held the most"), std::string::npos)
          << next.dump();
      next = s.Exec("print('again')", {{"session", "hog"}});
    }
    EXPECT_EQ(next["session_new"], true) << "the session holding them was ended: " << next.dump();
    EXPECT_EQ(next["stdout"], "again\n") << next.dump();
  }
}

// Issue 19, point 2, for one-shot runs: the children a run keeps alive
// came out of every other run's budget for its whole timeout (52 sleepers
// in a 64-process server left no run able to fork 20 for 120 s). While
// another run goes, all runs together may hold three quarters of the
// bound; the run holding the most is ended, and says so in its reason.
TEST(RunBoundTest, ChildrenAOneShotRunHoldsCannotStarveOtherRuns) {
  if (auto why = PosturesMissing("the postures need root")) GTEST_SKIP() << *why;
  for (const char* posture : {"root", "container", "docker"}) {
    SCOPED_TRACE(posture);
    ServerProcess s({{"MCP_EXEC_MAX_PROCESSES", "64"}, {"MCP_EXEC_MAX_CONCURRENT", "4"}}, {},
                    Wrapper(posture));
    s.Initialize();
    const std::string marker = "300." + Marker("");  // a sleep of 300 s, and a name to find
    const json id = s.NextId();
    s.SendCall(id, {{"code",
                     "import subprocess, time\n"
                     "ps = [subprocess.Popen(['sleep', '" +
                         marker +
                         "']) for _ in range(52)]\n"
                         "print(len(ps), 'held', flush=True)\n"
                         "time.sleep(120)\n"},
                    {"timeout_s", 150}});
    ASSERT_TRUE(WaitUntil([&] { return PidsWithCmdlineContaining(marker).size() >= 52; }, 30000))
        << PidsWithCmdlineContaining(marker).size() << " sleepers started; "
        << s.WaitForId(id, 1000).dump();
    // 52 held, and the run's own: another run cannot fork 20 beside them.
    json r = ForkInARun(s, 20);
    EXPECT_EQ(r["stdout"], "20 forked\n") << r.dump();
    json held = s.WaitForId(id, 30000);
    json out = held["result"]["structuredContent"];
    EXPECT_EQ(out["exit_code"], -1) << held.dump();
    EXPECT_EQ(out.value("signal", 0), 9) << held.dump();
    EXPECT_EQ(out.value("reason", ""), "processes") << held.dump();
    EXPECT_EQ(out["stdout"], "52 held\n") << held.dump();
    EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdlineContaining(marker).empty(); }, 10000))
        << "the held children outlived their run";
  }
}

// Code mode, found by the escape suite once its snippets shared a server with
// an upstream: in the docker posture runs keep the server's uid and see its
// processes, so without Landlock a run listed the stdio upstream's
// /proc/<pid>/fd (and could read its environ, the upstream's secrets). Such
// a start is refused, naming the upstream; an HTTP upstream is not a process
// of the server's and stays allowed.
TEST(CodeModePostureTest, AStdioUpstreamRunsCouldReadIsRefusedAtStart) {
  if (auto why = PosturesMissing("the postures need root")) GTEST_SKIP() << *why;
  {
    ServerProcess probe({}, {}, Wrapper("docker"));
    probe.Initialize();
    ASSERT_TRUE(probe.StderrHas("\"event\":\"sandbox\"")) << probe.Stderr();
    bool landlock = false;
    std::istringstream lines(probe.Stderr());
    for (std::string line; std::getline(lines, line);) {
      if (line.find("\"event\":\"sandbox\"") == std::string::npos) continue;
      for (const json& name : json::parse(line).value("active", json::array())) {
        landlock = landlock || name == "landlock";
      }
    }
    if (landlock) {
      GTEST_SKIP() << "Landlock is active in the docker posture here: its ptrace scoping keeps "
                      "the upstream out of the runs' reach, and the start is allowed";
    }
  }
  ServerProcess s({{"MCP_EXEC_UPSTREAMS", UpstreamsFile()}}, {}, Wrapper("docker"));
  EXPECT_EQ(s.Wait(60000), 1);
  const std::string err = s.Stderr();
  EXPECT_NE(err.find("MCP_EXEC_UPSTREAMS: upstream 'everything' (a stdio upstream) would run as "
                     "uid "),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("/proc/<pid>/environ"), std::string::npos) << err;
  EXPECT_NE(err.find("\"url\""), std::string::npos) << err;
}

std::string Name(const ::testing::TestParamInfo<Param>& info) {
  std::string n = (info.param.session ? "session_" : "") + info.param.posture + "_" +
                  info.param.file.substr(0, info.param.file.size() - 3);
  for (char& ch : n) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Suite, EscapeTest, ::testing::ValuesIn(Params()), Name);

}  // namespace
}  // namespace mcpexec::testing
