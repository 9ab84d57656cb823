// Start-up, shutdown, zygote restarts, logs and leaks of the real binary.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "server_process.h"
#include "test_binary.h"

namespace mcpexec::testing {
namespace {

// A bare environment, stderr apart, runs as a uid of this test's own.
CommandResult RunBinary(const std::string& env_and_args) { return RunBare(env_and_args); }

TEST(LifecycleTest, MalformedConfigIsOneLineAndExitOne) {
  for (const char* bad : {"MCP_EXEC_MAX_TIMEOUT_S=abc", "MCP_EXEC_DEFAULT_TIMEOUT_S=1.5",
                          "MCP_EXEC_MAX_OUTPUT_BYTES=", "MCP_EXEC_TRANSPORT=carrier-pigeon",
                          "MCP_EXEC_MAX_STDIN_BYTES=lots"}) {
    std::string var = std::string(bad).substr(0, std::string(bad).find('='));
    CommandResult r = RunBinary(std::string(bad) + " " + ServerBinary());
    EXPECT_EQ(r.status, 1) << bad;
    EXPECT_NE(r.err.find(var), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  CommandResult r = RunBinary(ServerBinary() + " --max-queue=lots");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--max-queue"), std::string::npos);
}

TEST(LifecycleTest, HelpAndVersion) {
  CommandResult r = RunBinary(ServerBinary() + " --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("MCP_EXEC_MAX_OUTPUT_BYTES"), std::string::npos);
  r = RunBinary(ServerBinary() + " --version");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("mcp-exec ", 0), 0u);
}

// doctor states the seccomp argument rules from the table the filter is
// built from, and starts nothing by hand: a bad zygote command line is
// refused by name.
TEST(LifecycleTest, DoctorShowsTheSeccompArgumentRules) {
  CommandResult r = RunBinary(ServerBinary() + " doctor --json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  bool socket_rule = false, ioctl_by_name = false;
  for (const auto& rule : j["seccomp_rules"]) {
    std::string action = rule.value("action", "");
    if (rule["syscall"] == "socket" && action.find("AF_UNIX") != std::string::npos) {
      socket_rule = true;
    }
    if (rule["syscall"] == "ioctl" && action.find("TCGETS") != std::string::npos) {
      ioctl_by_name = true;
    }
    EXPECT_FALSE(rule.value("why", "").empty()) << rule.dump();
  }
  EXPECT_TRUE(socket_rule) << j["seccomp_rules"].dump();
  EXPECT_TRUE(ioctl_by_name);
  r = RunBinary(ServerBinary() + " doctor");
  EXPECT_NE(r.out.find("socket: allow if arg0 (domain) == AF_UNIX"), std::string::npos) << r.out;

  r = RunBinary(ServerBinary() + " __zygote --spares=lots");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--spares=lots"), std::string::npos) << r.err;
}

// printf '<initialize>\n<initialized>\n<calls>\n' | mcp-exec: stdin ends
// while the runtime still warms; the calls run to their end (one for two
// seconds) and each is answered, then the server exits 0.
TEST(LifecycleTest, PipedCallsRunToTheirEndAndAreAnswered) {
  const std::string requests = "/tmp/mcp-exec-lifecycle-piped.jsonl." + std::to_string(getpid());
  {
    std::string lines =
        json({{"jsonrpc", "2.0"},
              {"id", 0},
              {"method", "initialize"},
              {"params", {{"protocolVersion", "2025-06-18"}, {"capabilities", json::object()}}}})
            .dump() +
        "\n" + json({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).dump() + "\n";
    const char* codes[] = {"print(6 * 7)", "import time; time.sleep(2); print('slept')",
                           "import sys; print('err', file=sys.stderr)"};
    for (int i = 0; i < 3; ++i) {
      lines += json({{"jsonrpc", "2.0"},
                     {"id", i + 1},
                     {"method", "tools/call"},
                     {"params", {{"name", "exec"}, {"arguments", {{"code", codes[i]}}}}}})
                   .dump() +
               "\n";
    }
    FILE* f = fopen(requests.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fwrite(lines.data(), 1, lines.size(), f);
    fclose(f);
  }
  const CommandResult r = RunBare(ServerBinary(), requests);
  unlink(requests.c_str());
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string& out = r.out;
  std::map<int, json> answers;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    json m = json::parse(line, nullptr, false);
    if (m.is_object() && m.contains("id") && m["id"].is_number_integer()) answers[m["id"]] = m;
  }
  ASSERT_EQ(answers.size(), 4u) << out;
  const char* want[] = {"42\n", "slept\n", ""};
  for (int i = 0; i < 3; ++i) {
    const json sc = answers[i + 1]["result"].value("structuredContent", json::object());
    EXPECT_EQ(sc.value("stdout", "?"), want[i]) << answers[i + 1].dump();
    EXPECT_EQ(sc.value("exit_code", -1), 0) << answers[i + 1].dump();
    EXPECT_FALSE(sc.contains("reason")) << answers[i + 1].dump();
  }
  EXPECT_EQ(answers[3]["result"]["structuredContent"]["stderr"], "err\n");
}

// Past MCP_EXEC_SHUTDOWN_GRACE_S a call still running at stdin's end is
// ended, its processes with it, and the server exits 0.
TEST(LifecycleTest, EofEndsInFlightRunsPastTheGraceAndExitsZero) {
  ServerProcess s(Env{{"MCP_EXEC_SHUTDOWN_GRACE_S", "1"}});
  s.Initialize();
  std::string m = s.StartSleepingRun(1, "4300");
  ASSERT_FALSE(m.empty());
  pid_t zygote = s.ZygotePid();
  s.CloseStdin();
  EXPECT_EQ(s.Wait(15000), 0);
  EXPECT_TRUE(PidsWithCmdlineContaining(m).empty());
  EXPECT_FALSE(ProcessExists(zygote));
}

TEST(LifecycleTest, TermAndIntSignalsExitZero) {
  for (int sig : {SIGTERM, SIGINT}) {
    ServerProcess s;
    s.Initialize();
    std::string m = s.StartSleepingRun(1, "4400");
    ASSERT_FALSE(m.empty());
    kill(s.pid(), sig);
    EXPECT_EQ(s.Wait(15000), 0) << "signal " << sig;
    EXPECT_TRUE(PidsWithCmdlineContaining(m).empty());
  }
}

TEST(LifecycleTest, DeadZygoteIsRestartedAndItsRunGetsAToolError) {
  ServerProcess s;
  s.Initialize();
  pid_t zygote = s.ZygotePid();
  ASSERT_GT(zygote, 0);
  std::string m = s.StartSleepingRun(1, "4500");
  ASSERT_FALSE(m.empty());
  kill(zygote, SIGKILL);
  json r = s.WaitForId(1, 30000);
  EXPECT_EQ(r["result"]["isError"], true) << r.dump();
  EXPECT_NE(r["result"]["content"][0]["text"].get<std::string>().find("sandbox"),
            std::string::npos);
  EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdlineContaining(m).empty(); }, 5000))
      << "the lost run's processes are gone too";
  EXPECT_EQ(s.Exec("print('after restart')")["stdout"], "after restart\n");
  EXPECT_NE(s.ZygotePid(), zygote);
  EXPECT_TRUE(s.StderrHas("zygote_restarted")) << s.Stderr();
}

// The folders under a workdir root whose names start mcp-exec- (the cache
// aside), sorted.
std::set<std::string> ServerFolders(const std::string& root) {
  std::set<std::string> names;
  if (DIR* d = opendir(root.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind("mcp-exec-", 0) == 0 && n.rfind("mcp-exec-cache-", 0) != 0) names.insert(n);
    }
    closedir(d);
  }
  return names;
}

// A server killed without a chance to clean up (SIGKILL, the OOM killer)
// leaves its folders and its resource store; the next server started on
// that root removes them, and never a live server's.
TEST(LifecycleTest, AKilledServersFoldersAreSweptByTheNextNeverALiveOnes) {
  char tmpl[] = "/tmp/mcp-exec-sweep-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  ASSERT_EQ(chmod(root.c_str(), 0755), 0);
  const Env env{{"MCP_EXEC_WORKDIR_ROOT", root}};
  ServerProcess live(env);
  live.Initialize();  // and the warm-up: the folders are made after it
  const std::set<std::string> lives = ServerFolders(root);
  ASSERT_FALSE(lives.empty());
  std::set<std::string> killed_left;
  {
    ServerProcess killed(env);
    killed.Initialize();
    killed.Exec("print(1)");
    for (const std::string& n : ServerFolders(root)) {
      if (!lives.count(n)) killed_left.insert(n);
    }
    ASSERT_EQ(killed_left.size(), 2u) << "its runs' folder and its resource store";
    ASSERT_EQ(kill(killed.pid(), SIGKILL), 0);
    EXPECT_NE(killed.Wait(15000), -1);
  }
  for (const std::string& n : ServerFolders(root)) {
    ASSERT_TRUE(lives.count(n) || killed_left.count(n)) << n;
  }
  // Past the sweep's age for everyone: only the lock tells the dead apart.
  const timespec past[2] = {{time(nullptr) - 60, 0}, {time(nullptr) - 60, 0}};
  for (const std::string& n : ServerFolders(root)) {
    ASSERT_EQ(utimensat(AT_FDCWD, (root + "/" + n).c_str(), past, AT_SYMLINK_NOFOLLOW), 0) << n;
  }
  ServerProcess next(env);
  next.Initialize();
  EXPECT_TRUE(next.StderrHas("\"event\":\"swept\",\"folders\":2")) << next.Stderr();
  const std::set<std::string> now = ServerFolders(root);
  for (const std::string& n : killed_left) EXPECT_FALSE(now.count(n)) << n << " is left";
  for (const std::string& n : lives) EXPECT_TRUE(now.count(n)) << n << " of a live server";
  EXPECT_EQ(live.Exec("print(2)")["stdout"], "2\n") << "the live server still runs";
  EXPECT_EQ(next.Exec("print(3)")["stdout"], "3\n");
  live.CloseStdin();
  next.CloseStdin();
  EXPECT_EQ(live.Wait(15000), 0);
  EXPECT_EQ(next.Wait(15000), 0);
  EXPECT_TRUE(ServerFolders(root).empty()) << "each removed its own";
  std::filesystem::remove_all(root);
}

TEST(LifecycleTest, LogsHoldMetadataOnlyNeverCodeStdinOrOutput) {
  ServerProcess s;
  s.Initialize();
  json r = s.Exec(
      "# CODE_SECRET_1c2d\nimport sys\nprint('OUT_' + 'SECRET_3e4f')\n"
      "print('ERR_' + 'SECRET_5a6b', file=sys.stderr)\nsys.stdin.read()",
      {{"stdin", "STDIN_SECRET_7c8d"}});
  EXPECT_EQ(r["stdout"], "OUT_SECRET_3e4f\n");
  s.CloseStdin();
  s.Wait(15000);
  std::string log = s.Stderr();
  EXPECT_NE(log.find("\"event\":\"run\""), std::string::npos);
  EXPECT_NE(log.find("\"exit_code\":0"), std::string::npos);
  for (const char* secret : {"CODE_SECRET", "OUT_SECRET", "ERR_SECRET", "STDIN_SECRET"}) {
    EXPECT_EQ(log.find(secret), std::string::npos) << secret;
  }
  // Every line is a JSON object.
  size_t start = 0;
  while (start < log.size()) {
    size_t nl = log.find('\n', start);
    std::string line = log.substr(start, nl - start);
    EXPECT_NO_THROW(json::parse(line)) << line;
    start = nl == std::string::npos ? log.size() : nl + 1;
  }
}

// 1,000 sequential runs: no fd growth in the supervisor, no zombies, and the
// zygote's RSS flat. Prints the numbers it measured.
TEST(SoakTest, ThousandSequentialRunsLeakNothing) {
  ServerProcess s;
  s.Initialize();
  for (int i = 0; i < 20; ++i) s.Exec("print(1)");  // settle lazily allocated state
  pid_t zygote = s.ZygotePid();
  usleep(200000);
  int fds_before = CountOpenFds(s.pid());
  long rss_before = RssKiB(zygote);
  // The zygote's live children between runs are its spare runners.
  int children_before = static_cast<int>(ChildrenOf(zygote, false).size());
  for (int i = 0; i < 1000; ++i) {
    json r = s.Exec(i % 10 == 0 ? "import pandas as pd\nprint(pd.DataFrame({'a': [1]}).a.sum())"
                                : "print(1)");
    ASSERT_EQ(r["exit_code"], 0) << r.dump();
  }
  usleep(500000);  // let the last teardown finish
  int fds_after = CountOpenFds(s.pid());
  long rss_after = RssKiB(zygote);
  auto zombies = [&](pid_t parent) {
    int n = 0;
    for (pid_t c : ChildrenOf(parent, true)) {
      if (!ProcessExists(c)) continue;
      if (std::find(ChildrenOf(parent, false).begin(), ChildrenOf(parent, false).end(), c) ==
          ChildrenOf(parent, false).end()) {
        ++n;
      }
    }
    return n;
  };
  int zombies_server = zombies(s.pid()), zombies_zygote = zombies(zygote);
  int children_after = static_cast<int>(ChildrenOf(zygote, false).size());
  printf(
      "soak: supervisor fds %d -> %d; zygote RSS %ld -> %ld KiB; zombies %d/%d; "
      "zygote children (spares) %d -> %d\n",
      fds_before, fds_after, rss_before, rss_after, zombies_server, zombies_zygote, children_before,
      children_after);
  EXPECT_EQ(fds_after, fds_before);
  EXPECT_EQ(zombies_server, 0);
  EXPECT_EQ(zombies_zygote, 0);
  EXPECT_EQ(children_after, children_before) << "only the spare runners are left";
  EXPECT_EQ(s.ZygotePid(), zygote) << "the zygote never restarted";
  EXPECT_LT(rss_after, rss_before + rss_before / 20) << "zygote RSS grew by more than 5%";
}

// Issue 37, point 4: the handshake needs only the configuration, so it is
// answered while the zygote warms up (a client's first answer then takes
// milliseconds, and a 2026 client's server/discover probe on a sibling
// server does not wait for a warm-up it never uses); tools/list and calls
// wait for the warm-up. The warm-up is made 5 s long (a preloaded module of
// a venv sleeps), so the order shows in the server's own log.
TEST(LifecycleTest, TheHandshakeIsAnsweredWhileTheZygoteWarmsUp) {
  const std::string venv = "/var/tmp/mcp-exec-slow-warmup." + std::to_string(getpid());
  ASSERT_FALSE(
      MakeVenv(venv, {{"mcp_exec_slow_warmup.py", "import time\ntime.sleep(5)\n"}}).empty());
  {
    ServerProcess s(Env{{"MCP_EXEC_PYTHON", venv}, {"MCP_EXEC_PRELOAD", "mcp_exec_slow_warmup"}});
    // Not Initialize(): that waits for tools/list, hence the warm-up.
    json init = s.Request("initialize", {{"protocolVersion", "2025-11-25"},
                                         {"capabilities", json::object()},
                                         {"clientInfo", {{"name", "early"}, {"version", "1"}}}});
    s.Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    EXPECT_TRUE(init["result"].contains("protocolVersion")) << init.dump();
    EXPECT_TRUE(init["result"].contains("instructions")) << init.dump();
    EXPECT_EQ(s.Request("ping", json::object())["result"], json::object());
    // Sent during the warm-up: a call the contract refuses is answered at
    // once; a good one runs once the zygote is warm; then tools/list.
    json early = s.NextId();
    s.SendCall(early, {{"code", "print('warm')"}});
    json refused = s.Call(json::object());
    EXPECT_EQ(refused["content"][0]["text"], "code must not be empty") << refused.dump();
    json r = s.WaitForId(early);
    EXPECT_EQ(r["result"]["structuredContent"]["stdout"], "warm\n") << r.dump();
    json tools = s.Request("tools/list", json::object());
    ASSERT_EQ(tools["result"]["tools"].size(), 1u) << tools.dump();
    EXPECT_TRUE(s.StderrHas("\"event\":\"zygote_ready\"")) << s.Stderr();
    const std::string log = s.Stderr();
    const size_t initialized = log.find("\"event\":\"initialize\"");
    const size_t ready = log.find("\"event\":\"zygote_ready\"");
    ASSERT_NE(initialized, std::string::npos) << log;
    EXPECT_LT(initialized, ready) << "initialize waited for the warm-up:\n" << log;
  }
  ASSERT_EQ(system(("rm -rf '" + venv + "'").c_str()), 0);
}

}  // namespace
}  // namespace mcpexec::testing
