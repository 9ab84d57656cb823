// Every rule of the exec tool's contract, through the real binary.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "server_process.h"

namespace mcpexec::testing {
namespace {

std::string ToolErrorText(const json& result) {
  EXPECT_EQ(result.value("isError", false), true) << result.dump();
  EXPECT_FALSE(result.contains("structuredContent"));
  return result["content"][0]["text"];
}

class ContractTest : public ::testing::Test {
 protected:
  // A test with a configuration of its own gets a server of its own; the
  // others share the suite's.
  void Start(const std::map<std::string, std::string>& env = {}) {
    if (env.empty()) {
      server_ = &shared_.Get();
      return;
    }
    own_ = std::make_unique<ServerProcess>(env);
    own_->Initialize();
    server_ = own_.get();
  }
  static void TearDownTestSuite() { shared_.Release(); }
  ServerProcess& s() { return *server_; }
  ServerProcess* server_ = nullptr;
  std::unique_ptr<ServerProcess> own_;
  static SharedServer shared_;
};
SharedServer ContractTest::shared_;

TEST_F(ContractTest, ValidationOrderAndMessages) {
  Start({{"MCP_EXEC_MAX_STDIN_BYTES", "10"}});
  EXPECT_EQ(ToolErrorText(s().Call(json::object())), "code must not be empty");
  EXPECT_EQ(ToolErrorText(s().Call({{"code", " \n "}})), "code must not be empty");
  EXPECT_EQ(ToolErrorText(s().Call({{"code", 12}})),
            "code must not be empty: it must be a string of Python source, not a number");
  // code first, even with other faults present
  EXPECT_EQ(ToolErrorText(s().Call({{"code", ""}, {"bogus", 1}, {"timeout_s", "x"}})),
            "code must not be empty");
  EXPECT_NE(ToolErrorText(s().Call({{"code", "1"}, {"bogus", 1}})).find("bogus"),
            std::string::npos);
  EXPECT_NE(ToolErrorText(s().Call({{"code", "1"}, {"timeout_s", "5"}})).find("timeout_s"),
            std::string::npos);
  EXPECT_NE(ToolErrorText(s().Call({{"code", "1"}, {"timeout_s", 2.5}})).find("timeout_s"),
            std::string::npos);
  EXPECT_NE(ToolErrorText(s().Call({{"code", "1"}, {"stdin", 3}})).find("stdin"),
            std::string::npos);
  // types before the stdin size
  EXPECT_NE(
      ToolErrorText(s().Call({{"code", "1"}, {"stdin", std::string(50, 'x')}, {"timeout_s", "5"}}))
          .find("timeout_s"),
      std::string::npos);
  EXPECT_EQ(s().Exec("print('ok')", {{"timeout_s", 5.0}})["stdout"], "ok\n");
}

TEST_F(ContractTest, StdinCapIsInBytesAndExactlyTheCapIsAccepted) {
  Start({{"MCP_EXEC_MAX_STDIN_BYTES", "10"}});
  EXPECT_EQ(ToolErrorText(s().Call({{"code", "1"}, {"stdin", std::string(11, 'a')}})),
            "stdin exceeds limit of 10 bytes (MCP_EXEC_MAX_STDIN_BYTES): it is 11 bytes in "
            "UTF-8; pass large data in files instead, or raise the limit");
  EXPECT_EQ(s().Exec("import sys; print(len(sys.stdin.read()))",
                     {{"stdin", std::string(10, 'a')}})["stdout"],
            "10\n");
  std::string six_e;  // 6 characters, 12 bytes
  for (int i = 0; i < 6; ++i) six_e += "\xC3\xA9";
  EXPECT_EQ(
      ToolErrorText(s().Call({{"code", "1"}, {"stdin", six_e}}))
          .rfind("stdin exceeds limit of 10 bytes (MCP_EXEC_MAX_STDIN_BYTES): it is 12 bytes", 0),
      0u);
}

TEST_F(ContractTest, TimeoutIsClampedNeverRejected) {
  Start({{"MCP_EXEC_DEFAULT_TIMEOUT_S", "2"}, {"MCP_EXEC_MAX_TIMEOUT_S", "3"}});
  const std::string sleeper = "import time\nprint('start', flush=True)\ntime.sleep(30)";
  // negative -> 1 s
  json r = s().Exec(sleeper, {{"timeout_s", -5}});
  EXPECT_TRUE(r["timed_out"]);
  EXPECT_EQ(r["exit_code"], -1);
  EXPECT_EQ(r["stdout"], "start\n");
  EXPECT_GE(r["duration_ms"], 900);
  EXPECT_LT(r["duration_ms"], 1900);
  EXPECT_EQ(r["timeout_note"], "timeout_s -5 is below 1: the run had 1 s");
  // 0 -> default (2 s)
  r = s().Exec(sleeper, {{"timeout_s", 0}});
  EXPECT_FALSE(r.contains("timeout_note")) << "the default is no clamp";
  EXPECT_TRUE(r["timed_out"]);
  EXPECT_GE(r["duration_ms"], 1900);
  EXPECT_LT(r["duration_ms"], 2900);
  // above max -> max (3 s)
  r = s().Exec(sleeper, {{"timeout_s", 1000}});
  EXPECT_TRUE(r["timed_out"]);
  EXPECT_GE(r["duration_ms"], 2900);
  EXPECT_LT(r["duration_ms"], 3900);
  EXPECT_EQ(r["timeout_note"],
            "timeout_s 1000 is above MCP_EXEC_MAX_TIMEOUT_S (3): the run had 3 s");
}

TEST_F(ContractTest, OneOutputBudgetSharedByBothStreams) {
  Start({{"MCP_EXEC_MAX_OUTPUT_BYTES", "10"}});
  json r = s().Exec("import sys; sys.stdout.write('x' * 10)");
  EXPECT_EQ(r["stdout"], std::string(10, 'x'));
  EXPECT_FALSE(r["truncated"]) << "exactly the cap is not truncated";
  r = s().Exec("import sys; sys.stdout.write('x' * 11)");
  EXPECT_EQ(r["stdout"], std::string(10, 'x'));
  EXPECT_TRUE(r["truncated"]) << "one byte more is";
  // 6 bytes on stdout, then 5 on stderr: one budget, consumed in arrival order.
  r = s().Exec(
      "import sys, time\nsys.stdout.write('o' * 6); sys.stdout.flush(); time.sleep(0.2)\n"
      "sys.stderr.write('e' * 5); sys.stderr.flush()");
  EXPECT_EQ(r["stdout"], "oooooo");
  EXPECT_EQ(r["stderr"], "eeee");
  EXPECT_TRUE(r["truncated"]);
  // Reaching the cap does not kill the program: the rest is read and dropped.
  r = s().Exec("import sys\nfor _ in range(200): sys.stdout.write('y' * 10000)\nsys.exit(7)");
  EXPECT_EQ(r["exit_code"], 7);
  EXPECT_TRUE(r["truncated"]);
  EXPECT_FALSE(r["timed_out"]);
}

TEST_F(ContractTest, InvalidUtf8BecomesOneReplacementPerRun) {
  Start({{"MCP_EXEC_MAX_OUTPUT_BYTES", "3"}});
  json r = s().Exec("import sys; sys.stdout.buffer.write(b'a\\xff\\xfe')");
  EXPECT_EQ(r["stdout"], "a\xEF\xBF\xBD");
  // A cut inside a multi-byte character is repaired the same way.
  r = s().Exec("import sys; sys.stdout.write('ab\\u00e9')");
  EXPECT_EQ(r["stdout"], "ab\xEF\xBF\xBD");
  EXPECT_TRUE(r["truncated"]);
}

TEST_F(ContractTest, InvalidUtf8OkBad) {
  Start();
  json r = s().Exec("import sys; sys.stdout.buffer.write(b'ok\\xff\\xfebad')");
  EXPECT_EQ(r["stdout"],
            "ok\xEF\xBF\xBD"
            "bad");
}

TEST_F(ContractTest, ExitCodesAreNormalResults) {
  Start();
  json r = s().Exec("import sys; sys.exit(3)");
  EXPECT_EQ(r["exit_code"], 3);
  r = s().Exec("raise SystemExit('bye')");
  EXPECT_EQ(r["exit_code"], 1);
  EXPECT_EQ(r["stderr"], "bye\n");
  r = s().Exec("def f():\n    raise ValueError('boom')\nf()");
  EXPECT_EQ(r["exit_code"], 1);
  EXPECT_NE(r["stderr"].get<std::string>().find("File \"main.py\", line 3, in <module>"),
            std::string::npos)
      << r["stderr"];
  EXPECT_NE(r["stderr"].get<std::string>().find("raise ValueError('boom')"), std::string::npos)
      << "the caller's source line is shown";
  r = s().Exec("import os; os._exit(255)");
  EXPECT_EQ(r["exit_code"], 255);
  r = s().Exec("exit(256 + 4)");
  EXPECT_EQ(r["exit_code"], 4);
}

TEST_F(ContractTest, SignalIsExitCodeMinusOneAndTheServerLives) {
  Start();
  json r = s().Exec("import os, signal; os.kill(os.getpid(), signal.SIGKILL)");
  EXPECT_EQ(r["exit_code"], -1);
  EXPECT_EQ(r["signal"], 9);
  EXPECT_FALSE(r["timed_out"]);
  r = s().Exec("import os; os.abort()");
  EXPECT_EQ(r["exit_code"], -1);
  EXPECT_EQ(r["signal"], 6);
  EXPECT_EQ(s().Exec("print('alive')")["stdout"], "alive\n");
}

TEST_F(ContractTest, StdinIsAPipeThenEof) {
  Start();
  EXPECT_EQ(s().Exec("import sys; print(repr(sys.stdin.read()))")["stdout"], "''\n");
  EXPECT_EQ(s().Exec("print(input() + '|' + input())", {{"stdin", "a\nb\n"}})["stdout"], "a|b\n");
  // Code that never reads a large stdin neither hangs nor fails.
  json r = s().Exec("print('ignored')", {{"stdin", std::string(1000000, 'z')}});
  EXPECT_EQ(r["exit_code"], 0);
  EXPECT_EQ(r["stdout"], "ignored\n");
}

// Fresh: nothing one run wrote is visible to the next. Removed: the run
// directories the supervisor makes are gone after each run, also after a
// timeout. (Where mount namespaces are allowed, the run works in a private
// tmpfs /tmp that dies with it; otherwise in the supervisor's directory.)
TEST_F(ContractTest, FreshPrivateWorkdirEachRunRemovedAfterwards) {
  std::string root = "/tmp/mcp-exec-contract-" + Marker("");
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  Start({{"MCP_EXEC_WORKDIR_ROOT", root}});
  auto run_dirs_left = [&] {
    std::vector<std::string> left;
    std::string cmd = "find " + root + " -mindepth 2 -maxdepth 2 -name 'run-*'";
    FILE* p = popen(cmd.c_str(), "r");
    char line[4096];
    while (p && fgets(line, sizeof line, p)) left.push_back(line);
    if (p) pclose(p);
    return left;
  };
  json a = s().Exec(
      "import os\nopen('left.txt', 'w').write('x')\nos.mkdir('d')\nprint(sorted(os.listdir('.')))");
  EXPECT_EQ(a["stdout"], "['d', 'left.txt', 'out']\n");
  json b = s().Exec(
      "import os, tempfile\nprint(sorted(os.listdir('.')), os.access('.', os.W_OK))\n"
      "print(os.environ['HOME'] == os.getcwd() == tempfile.gettempdir())");
  // Fresh: only the out/ every run starts with.
  EXPECT_EQ(b["stdout"], "['out'] True\nTrue\n") << "nothing of the last run is visible";
  EXPECT_TRUE(WaitUntil([&] { return run_dirs_left().empty(); }, 5000));
  json t = s().Exec("import time\nopen('f', 'w')\nprint('started', flush=True)\ntime.sleep(60)",
                    {{"timeout_s", 1}});
  EXPECT_TRUE(t["timed_out"]);
  EXPECT_TRUE(WaitUntil([&] { return run_dirs_left().empty(); }, 5000)) << "after a timeout";
  EXPECT_EQ(s().Exec("import os; print(os.listdir('.'))")["stdout"], "['out']\n");
  own_.reset();
  // The server removed its own folder below it; its cache (mcp-exec-cache-N)
  // outlives it on purpose, so the test removes that.
  EXPECT_EQ(std::system(("rm -rf " + root + "/mcp-exec-cache-*").c_str()), 0);
  EXPECT_EQ(rmdir(root.c_str()), 0) << "the server left something in " << root;
}

TEST_F(ContractTest, DeadlineKillsTheWholeTreeIncludingSetsidChildren) {
  Start();
  std::string m1 = "4000." + Marker(""), m2 = "4001." + Marker(""), m3 = "4002." + Marker("");
  json r = s().Exec(
      "import os, subprocess, time\n"
      "subprocess.Popen(['sleep', '" +
          m1 +
          "'], start_new_session=True)\n"
          "subprocess.Popen(['sleep', '" +
          m2 +
          "'])\n"
          "if os.fork() == 0:\n"
          "    os.setsid()\n"
          "    if os.fork() == 0:\n"
          "        os.execvp('sleep', ['sleep', '" +
          m3 +
          "'])\n"
          "    os._exit(0)\n"
          "time.sleep(1)\n"
          "print('children started', flush=True)\n"
          "time.sleep(100)\n",
      {{"timeout_s", 2}});
  EXPECT_TRUE(r["timed_out"]);
  EXPECT_EQ(r["exit_code"], -1);
  EXPECT_EQ(r["stdout"], "children started\n");
  for (const std::string& m : {m1, m2, m3}) {
    EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdlineContaining(m).empty(); }, 5000))
        << "a process of the run survived the deadline: sleep " << m;
  }
}

TEST_F(ContractTest, BackgroundChildHoldingThePipesDoesNotDelayTheAnswer) {
  Start();
  std::string m = "4100." + Marker("");
  json r = s().Exec("import subprocess\nsubprocess.Popen(['sleep', '" + m + "'])\nprint('done')",
                    {{"timeout_s", 20}});
  EXPECT_FALSE(r["timed_out"]);
  EXPECT_EQ(r["exit_code"], 0);
  EXPECT_LT(r["duration_ms"], 10000);
  EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdlineContaining(m).empty(); }, 5000));
}

TEST_F(ContractTest, EveryRunGetsFreshRandomness) {
  Start();
  const std::string code = "import random, numpy\nprint(random.random(), numpy.random.rand())";
  std::string a = s().Exec(code)["stdout"], b = s().Exec(code)["stdout"];
  auto space_a = a.find(' '), space_b = b.find(' ');
  EXPECT_NE(a.substr(0, space_a), b.substr(0, space_b)) << "random.random()";
  EXPECT_NE(a.substr(space_a), b.substr(space_b)) << "numpy.random.rand()";
}

TEST_F(ContractTest, EnvironmentHoldsNothingOfTheServers) {
  Start({{"MCP_EXEC_AUTH_TOKEN", "tok-4f1c9a"}, {"SERVER_SECRET", "sec-77d2"}});
  json r = s().Exec(
      "import os\nprint(sorted(os.environ))\nprint(open('/proc/self/environ','rb').read())");
  std::string out = r["stdout"];
  EXPECT_EQ(out.find("tok-4f1c9a"), std::string::npos);
  EXPECT_EQ(out.find("sec-77d2"), std::string::npos);
  EXPECT_EQ(out.find("MCP_EXEC"), std::string::npos);
}

TEST_F(ContractTest, SixPackagesAreImportable) {
  Start();
  json r = s().Exec(
      "import numpy, pandas, matplotlib.pyplot as plt, PIL.Image, yaml, jinja2\n"
      "fig, ax = plt.subplots(); ax.plot([1, 2]); fig.savefig('f.png')\n"
      "print(PIL.Image.open('f.png').size[0] > 0, yaml.safe_load('a: 1'), "
      "jinja2.Template('{{x}}').render(x=2), int(pandas.Series([1, 2]).sum()))");
  EXPECT_EQ(r["exit_code"], 0) << r["stderr"];
  EXPECT_EQ(r["stdout"], "True {'a': 1} 2 3\n");
}

TEST_F(ContractTest, AtCapacityIsAToolErrorNeverAHang) {
  Start({{"MCP_EXEC_MAX_CONCURRENT", "1"}, {"MCP_EXEC_MAX_QUEUE", "0"}});
  json id = s().NextId();
  s().SendCall(id, {{"code", "import time; time.sleep(2)"}});
  usleep(300000);
  json busy = s().Call({{"code", "print(1)"}}, 5000);
  EXPECT_NE(ToolErrorText(busy).find("capacity"), std::string::npos);
  json first = s().WaitForId(id);
  EXPECT_EQ(first["result"]["structuredContent"]["exit_code"], 0);
  EXPECT_EQ(s().Exec("print(1)")["stdout"], "1\n");
}

TEST_F(ContractTest, QueueWaitIsNotPartOfDuration) {
  Start({{"MCP_EXEC_MAX_CONCURRENT", "1"}, {"MCP_EXEC_MAX_QUEUE", "4"}});
  json id = s().NextId();
  s().SendCall(id, {{"code", "import time; time.sleep(2)"}});
  usleep(300000);
  json queued = s().Exec("print('second')");
  EXPECT_EQ(queued["stdout"], "second\n");
  EXPECT_GE(queued["queue_ms"], 1000);
  EXPECT_LT(queued["duration_ms"], 1000);
  s().WaitForId(id);
}

TEST_F(ContractTest, CancelledRunIsKilledAndGetsNoResponse) {
  Start();
  json id = s().NextId();
  std::string m = s().StartSleepingRun(id, "4200");
  ASSERT_FALSE(m.empty());
  s().Send({{"jsonrpc", "2.0"},
            {"method", "notifications/cancelled"},
            {"params", {{"requestId", id}, {"reason", "test"}}}});
  EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdlineContaining(m).empty(); }, 5000));
  EXPECT_EQ(s().Exec("print('next')")["stdout"], "next\n");
  EXPECT_THROW(s().WaitForId(id, 1000), std::runtime_error) << "no response to a cancelled request";
}

}  // namespace
}  // namespace mcpexec::testing
