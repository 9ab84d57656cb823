// Issue 26, point 8: the rough edges a new user hit, each with its input,
// driven through the built binary (stdio, streamable HTTP, legacy SSE).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "http_harness.h"
#include "server_process.h"
#include "test_binary.h"

namespace mcpexec::testing {
namespace {

using Ran = CommandResult;

// The binary with a bare environment; stdout and stderr apart.
Ran RunServer(const std::string& env_and_args) { return RunBare(env_and_args); }

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// Tests with a configuration of their own start a server of their own;
// the others share the suite's.
class RoughEdgesTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { shared_.Release(); }
  static SharedServer shared_;
};
SharedServer RoughEdgesTest::shared_;

TEST_F(RoughEdgesTest, SettingsThatCannotWorkAreStartErrors) {
  const std::string bin = ServerBinary();
  // A root that does not exist is not made (nor its parents).
  const std::string missing = "/tmp/mcp-exec-no-such-root." + std::to_string(getpid());
  Ran r = RunServer("MCP_EXEC_WORKDIR_ROOT=" + missing + "/x " + bin);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Has(r.err, "MCP_EXEC_WORKDIR_ROOT (or --workdir-root) " + missing + "/x")) << r.err;
  EXPECT_TRUE(Has(r.err, "create it")) << r.err;
  struct stat st;
  EXPECT_NE(stat(missing.c_str(), &st), 0) << missing << " was created";
}

// Issue 36, point 8: two values the Go server starts with (the contract),
// which 7c5f5b2 refused at start. They start, mean what they meant there,
// and say so in the start log and doctor.
TEST_F(RoughEdgesTest, TheGoServersLenientValuesStartWithTheirMeaning) {
  ServerProcess s(Env{{"MCP_EXEC_DEFAULT_TIMEOUT_S", "30"}, {"MCP_EXEC_MAX_TIMEOUT_S", "2"}});
  s.Initialize();
  json r = s.Exec("import time\ntime.sleep(10)\nprint('not reached')");
  EXPECT_EQ(r["timed_out"], true) << r.dump();
  EXPECT_LT(r["duration_ms"].get<int64_t>(), 9000) << "the default is clamped to the max (2 s)";
  EXPECT_TRUE(
      Has(s.Stderr(), "MCP_EXEC_DEFAULT_TIMEOUT_S (30) is above MCP_EXEC_MAX_TIMEOUT_S (2)"))
      << s.Stderr();
  const std::string bin = ServerBinary();
  Ran d = RunServer("MCP_EXEC_DEFAULT_TIMEOUT_S=30 MCP_EXEC_MAX_TIMEOUT_S=2 " + bin + " doctor");
  EXPECT_TRUE(Has(d.out, "warning: MCP_EXEC_DEFAULT_TIMEOUT_S (30) is above")) << d.out << d.err;

  ServerProcess none(Env{{"MCP_EXEC_MAX_OUTPUT_BYTES", "0"}});
  none.Initialize();
  r = none.Exec("import sys\nprint('out')\nprint('err', file=sys.stderr)");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["stdout"], "") << r.dump();
  EXPECT_EQ(r["stderr"], "") << r.dump();
  EXPECT_EQ(r["truncated"], true) << r.dump();
  r = none.Exec("pass");
  EXPECT_EQ(r["truncated"], false) << "nothing printed, nothing dropped: " << r.dump();
  EXPECT_TRUE(Has(none.Stderr(), "MCP_EXEC_MAX_OUTPUT_BYTES is 0")) << none.Stderr();
}

TEST_F(RoughEdgesTest, AMistypedFlagGetsASuggestionAndVersionHasItsShortForms) {
  const std::string bin = ServerBinary();
  Ran r = RunServer(bin + " --memory-limit=100");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(
      Has(r.err, "unknown argument \"--memory-limit=100\" (did you mean --memory-limit-mb?)"))
      << r.err;
  r = RunServer(bin + " --max-timout-s=5");
  EXPECT_TRUE(Has(r.err, "(did you mean --max-timeout-s?)")) << r.err;
  r = RunServer(bin + " MCP_EXEC_MAX_QUEUE=3");
  EXPECT_TRUE(Has(r.err, "(did you mean --max-queue=...?)")) << r.err;
  r = RunServer(bin + " --zzzzzzzzzzzzzzzz");
  EXPECT_EQ(r.err, "mcp-exec: unknown argument \"--zzzzzzzzzzzzzzzz\" (see --help)\n");
  for (const char* form : {" -V", " version", " --version"}) {
    r = RunServer(bin + form);
    EXPECT_EQ(r.status, 0) << form << ": " << r.err;
    EXPECT_EQ(r.out.rfind("mcp-exec ", 0), 0u) << form << ": " << r.out;
  }
  r = RunServer(bin + " --help");
  EXPECT_TRUE(Has(r.out, "--version (or -V, version)")) << r.out;
}

TEST_F(RoughEdgesTest, DoctorPrintsItsReportWithoutLogLines) {
  Ran r = RunServer(ServerBinary() + " doctor");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("mcp-exec ", 0), 0u) << r.out;
  EXPECT_FALSE(Has(r.out, "zygote_ready")) << r.out;
  EXPECT_FALSE(Has(r.err, "zygote_ready")) << r.err;
}

// The token guards http and sse; stdio has no auth, and the start log says
// so instead of "auth": true.
TEST_F(RoughEdgesTest, StdioSaysTheTokenIsIgnored) {
  ServerProcess s(Env{{"MCP_EXEC_AUTH_TOKEN", "not-for-stdio"}});
  s.Initialize();
  EXPECT_TRUE(s.StderrHas("\"auth\":false")) << s.Stderr();
  EXPECT_TRUE(s.StderrHas("\"event\":\"auth_token_ignored\"")) << s.Stderr();
  EXPECT_FALSE(Has(s.Stderr(), "not-for-stdio")) << "the token is never logged";
}

TEST_F(RoughEdgesTest, CodeAndFilesAsPeopleWriteThem) {
  ServerProcess& s = shared_.Get();
  // A byte-order mark (Windows editors) is not code.
  json r = s.Exec("\xEF\xBB\xBFprint('bom')");
  EXPECT_EQ(r["stdout"], "bom\n") << r.dump();
  // A lone mark is not whitespace: it runs, as empty code, as the Go server
  // runs it (python3 skips the mark).
  r = s.Exec("\xEF\xBB\xBF");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["stdout"], "") << r.dump();
  // "./a.txt" is "a.txt"; "~/x.csv" is refused, saying what to write.
  r = s.Exec("print(open('a.txt').read())", {{"files", {{"./a.txt", "dot"}}}});
  EXPECT_EQ(r["stdout"], "dot\n") << r.dump();
  json refused = s.Call({{"code", "1"}, {"files", {{"~/x.csv", "a,b"}}}});
  ASSERT_TRUE(refused.value("isError", false)) << refused.dump();
  const std::string text = refused["content"][0]["text"];
  EXPECT_TRUE(Has(text, "starts with ~, which is not expanded")) << text;
  EXPECT_TRUE(Has(text, "write \"x.csv\"")) << text;
  refused = s.Call({{"code", "1"}, {"files", {{"a.txt", "1"}, {"./a.txt", "2"}}}});
  EXPECT_TRUE(refused.value("isError", false)) << refused.dump();
  // Wrong types and sizes name what came and the setting.
  refused = s.Call({{"code", 5}});
  EXPECT_EQ(refused["content"][0]["text"],
            "code must not be empty: it must be a string of Python source, not a number");
}

TEST_F(RoughEdgesTest, OutFilesComeInNaturalOrderAndLinksAreListed) {
  ServerProcess& s = shared_.Get();
  json r = s.Exec(
      "import os\nos.makedirs('out', exist_ok=True)\n"
      "for n in (10, 2, 1):\n    open(f'out/f{n}.txt', 'w').write(str(n))\n"
      "os.symlink('/etc/passwd', 'out/link')\n");
  ASSERT_TRUE(r.contains("files")) << r.dump();
  EXPECT_EQ(r["files"], json({"out/f1.txt", "out/f2.txt", "out/f10.txt"})) << r.dump();
  ASSERT_TRUE(r.contains("files_omitted")) << r.dump();
  EXPECT_EQ(r["files_omitted"],
            json::array({{{"path", "out/link"}, {"bytes", 0}, {"why", "not_a_file"}}}))
      << r.dump();
}

// A figure saved under out/ and left open came back twice, as an image and
// as the file: now once, as the file; one left open unsaved is an image, and
// plt.show() still shows what it is asked to. In a run and in a session cell.
TEST_F(RoughEdgesTest, AFigureSavedToOutComesBackOnceAsThatFile) {
  ServerProcess& s = shared_.Get();
  const std::string code =
      "import matplotlib.pyplot as plt\n"
      "plt.plot([1, 2])\nplt.savefig('out/saved.png')\n"
      "plt.figure()\nplt.plot([2, 1])\n";
  for (const json& more : {json::object(), json{{"session", "figures"}}}) {
    json args = more;
    args["code"] = code;
    json r = s.Call(args);
    ASSERT_FALSE(r.value("isError", true)) << r.dump().substr(0, 2000);
    const json& out = r["structuredContent"];
    EXPECT_EQ(out["files"], json::array({"out/saved.png"})) << more.dump();
    EXPECT_EQ(out.value("images", 0), 1) << "the unsaved figure only: " << more.dump();
    int images = 0, resources = 0;
    for (const json& item : r["content"]) {
      images += item["type"] == "image";
      resources += item["type"] == "resource";
    }
    EXPECT_EQ(images, 1) << more.dump();
    EXPECT_EQ(resources, 1) << more.dump();
  }
  json shown = s.Exec(
      "import matplotlib.pyplot as plt\nplt.plot([1])\nplt.savefig('out/y.png')\nplt.show()");
  EXPECT_EQ(shown.value("images", 0), 1) << shown.dump().substr(0, 2000);
  EXPECT_EQ(shown["files"], json::array({"out/y.png"}));
}

TEST_F(RoughEdgesTest, ACrashShowsTheCodesFramesNotTheRuntimes) {
  ServerProcess& s = shared_.Get();
  json r = s.Exec("import ctypes\ndef f():\n    ctypes.string_at(0)\nprint('before')\nf()");
  EXPECT_EQ(r["signal"], 11) << r.dump();
  EXPECT_EQ(r["stdout"], "before\n");
  const std::string err = r["stderr"];
  EXPECT_TRUE(Has(err, "Fatal Python error: Segmentation fault")) << err;
  EXPECT_TRUE(Has(err, "File \"main.py\", line 3 in f")) << err;
  EXPECT_FALSE(Has(err, "<mcp_exec_runtime>")) << err;
  EXPECT_FALSE(Has(err, "Extension modules:")) << err;
  EXPECT_LT(err.size(), 600u) << err;
}

// A Python session ended because the server was told to stop is counted as
// ended by the shutdown, not as a client that left.
TEST_F(RoughEdgesTest, SigtermEndsSessionsAsAShutdown) {
  ServerProcess s;
  s.Initialize();
  s.Exec("x = 1", {{"session", "kept"}});
  kill(s.pid(), SIGTERM);
  EXPECT_EQ(s.Wait(30000), 0);
  EXPECT_TRUE(s.StderrHas("\"reason\":\"shutdown\"")) << s.Stderr();
  EXPECT_FALSE(Has(s.Stderr(), "\"reason\":\"connection_closed\"")) << s.Stderr();
}

// Issue 26, point 7: MCP_EXEC_PYTHON naming a venv of the embedded Python's
// version lends its packages to the runs (read-only); another version is a
// start error saying why.
TEST(PythonEnvTest, AVenvOfTheSameVersionLendsItsPackages) {
  const std::string version = SystemPythonVersion();
  ASSERT_FALSE(version.empty());
  const std::string venv = "/var/tmp/mcp-exec-venv-test." + std::to_string(getpid());
  const std::string site =
      MakeVenv(venv, {{"mcp_exec_venv_probe.py", "VALUE = 42\n"},
                      {"mcp_exec_venv_probe-1.2.3.dist-info/METADATA",
                       "Metadata-Version: 2.1\nName: mcp-exec-venv-probe\nVersion: 1.2.3\n"}});
  ASSERT_FALSE(site.empty());
  {
    ServerProcess s(Env{{"MCP_EXEC_PYTHON", venv}});
    s.Initialize();
    json r = s.Exec("import mcp_exec_venv_probe\nprint(mcp_exec_venv_probe.VALUE)");
    EXPECT_EQ(r["stdout"], "42\n") << r.dump();
    r = s.Exec("open('" + site + "/new.py', 'w')");
    EXPECT_EQ(r["exit_code"], 1) << "the venv is read-only: " << r.dump();
    json tools = s.Request("tools/list", json::object());
    const std::string d = tools["result"]["tools"][0]["description"];
    EXPECT_TRUE(Has(d, "mcp-exec-venv-probe 1.2.3")) << d;
    EXPECT_TRUE(s.StderrHas("\"event\":\"python_site\"")) << s.Stderr();
  }
  // Another Python version: a start error that names both.
  const std::string other = venv + "/other-python";
  {
    std::ofstream script(other);
    script << "#!/bin/sh\necho '{\"version\": \"3.99\", \"site\": []}'\n";
  }
  ASSERT_EQ(chmod(other.c_str(), 0755), 0);
  Ran r = RunServer("MCP_EXEC_PYTHON=" + other + " " + ServerBinary());
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Has(r.err, "is Python 3.99")) << r.err;
  EXPECT_TRUE(Has(r.err, "the embedded Python " + version)) << r.err;
  r = RunServer("MCP_EXEC_PYTHON=/nonexistent/python " + ServerBinary());
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Has(r.err, "MCP_EXEC_PYTHON (or --python) /nonexistent/python is not")) << r.err;
  // The default means nothing (the Go server's default).
  r = RunServer("MCP_EXEC_PYTHON=python3 " + ServerBinary() + " --version");
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(system(("rm -rf '" + venv + "'").c_str()), 0);
}

class RoughEdgesHttpTest : public HttpServerTest {};

// JSON-RPC errors carry the request's id when it was read; the version
// refusal lists the versions; a 404 says where the endpoint is.
TEST_F(RoughEdgesHttpTest, ErrorsCarryTheIdAndSayWhatToDo) {
  Start();
  auto post = [&](const httplib::Headers& h, const std::string& body) {
    return Client().Post("/mcp", h, body, "application/json");
  };
  auto gone = post(Session("0123456789abcdef0123456789abcdef"),
                   R"({"jsonrpc":"2.0","id":"req-7","method":"ping"})");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
  json m = json::parse(gone->body);
  EXPECT_EQ(m["id"], "req-7") << gone->body;
  EXPECT_TRUE(Has(m["error"]["message"], "initialize again")) << gone->body;
  const std::string sid = Initialize();
  httplib::Headers h = Session(sid);
  h.erase("MCP-Protocol-Version");
  h.emplace("MCP-Protocol-Version", "1999-01-01");
  auto old = post(h, R"({"jsonrpc":"2.0","id":8,"method":"ping"})");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->status, 400) << old->body;
  m = json::parse(old->body);
  EXPECT_EQ(m["id"], 8) << old->body;
  EXPECT_TRUE(Has(m["error"]["message"], "supported: 2025-11-25")) << old->body;
  for (const char* path : {"/mcp/", "/sse"}) {
    auto r = Client().Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_TRUE(Has(r->body, "its one endpoint is /mcp")) << r->body;
  }
  EXPECT_TRUE(Has(Client().Get("/mcp/")->body, "no trailing slash"));
  EXPECT_TRUE(Has(Client().Get("/sse")->body, "MCP_EXEC_TRANSPORT=sse"));
}

TEST_F(RoughEdgesHttpTest, AnSseServerPointsStreamableClientsToTheirTransport) {
  Start({}, "sse");
  auto r = Client().Post("/mcp", kMcpHeaders, kInit, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(Has(r->body, "MCP_EXEC_TRANSPORT=http")) << r->body;
}

// --session-idle-s is honoured to the second, not at a sweep a minute away.
TEST_F(RoughEdgesHttpTest, AShortSessionIdleEndsSessionsOnTime) {
  Start({{"MCP_EXEC_SESSION_IDLE_S", "2"}});
  const std::string sid = Initialize();
  sleep(4);
  auto r = Client().Post("/mcp", Session(sid), R"({"jsonrpc":"2.0","id":2,"method":"ping"})",
                         "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
}

}  // namespace
}  // namespace mcpexec::testing
