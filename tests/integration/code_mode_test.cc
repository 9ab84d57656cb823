// Issue 23: code mode. Runs call the tools of a real MCP server from npm
// (@modelcontextprotocol/server-everything, installed by scripts/test.sh in
// tests/upstreams) through `import mcp_tools`, as a stdio upstream and as a
// streamable HTTP upstream on 127.0.0.1, over the built binary's stdio.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "http_harness.h"
#include "server_process.h"
#include "test_binary.h"

namespace mcpexec::testing {
namespace {

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

const std::string kSecret = "upstream-secret-7f3a9c";

std::string EverythingJs() {
  return std::string(MCP_EXEC_UPSTREAMS_DIR) +
         "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
}

// The upstreams file, written where the server can read it.
std::string WriteUpstreams(const json& servers) {
  char path[] = "/tmp/mcp-exec-upstreams-XXXXXX";
  int fd = mkstemp(path);
  std::string text = json{{"mcpServers", servers}}.dump(2);
  EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  return path;
}

json StdioEverything(const json& allow) {
  json e = {{"command", "node"},
            {"args", {EverythingJs(), "stdio"}},
            // GZIP_ALLOWED_DOMAINS: its gzip tool refuses every URL, which
            // makes it an upstream error that needs no network.
            {"env", {{"UPSTREAM_TOKEN", kSecret}, {"GZIP_ALLOWED_DOMAINS", "example.invalid"}}}};
  if (!allow.is_null()) e["allow"] = allow;
  return e;
}

const json kAllow = {"echo", "get-sum", "get-structured-content", "get-tiny-image",
                     "gzip-file-as-resource"};

class CodeModeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(access(EverythingJs().c_str(), R_OK), 0)
        << EverythingJs() << " is missing: run `npm ci` in tests/upstreams (scripts/test.sh does)";
    config_ = new std::string(WriteUpstreams({{"everything", StdioEverything(kAllow)}}));
    server_ = new ServerProcess({{"MCP_EXEC_UPSTREAMS", *config_}});
    server_->Initialize();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    unlink(config_->c_str());
    delete config_;
  }
  static ServerProcess& s() { return *server_; }
  static ServerProcess* server_;
  static std::string* config_;
};
ServerProcess* CodeModeTest::server_ = nullptr;
std::string* CodeModeTest::config_ = nullptr;

TEST_F(CodeModeTest, AttributeAndCallFormsGiveTheToolsValues) {
  json r = s().Exec(R"(
import mcp_tools
print(mcp_tools.everything.echo(message="hi"))
print(mcp_tools.call("everything", "get-sum", {"a": 2, "b": 40}))
w = mcp_tools.everything.get_structured_content(location="Chicago")
print(type(w).__name__, sorted(w))
items = mcp_tools.everything.get_tiny_image()
png = [i for i in items if i["type"] == "image"][0]
print(png["mimeType"], type(png["data"]).__name__, png["data"][:4])
)");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["stdout"],
            "Echo: hi\nThe sum of 2 and 40 is 42.\ndict ['conditions', 'humidity', "
            "'temperature']\nimage/png bytes b'\\x89PNG'\n")
      << r.dump();
  EXPECT_EQ(r["tool_calls"], 4);
}

TEST_F(CodeModeTest, AHundredCallsInOneRunAggregatedWithPandas) {
  json r = s().Exec(R"(
import mcp_tools, pandas as pd
rows = [{"i": i, "sum": float(mcp_tools.everything.get_sum(a=i, b=i).split()[-1].rstrip("."))}
        for i in range(100)]
df = pd.DataFrame(rows)
print(len(df), int(df["sum"].sum()))
)");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["stdout"], "100 9900\n") << r.dump();
  EXPECT_EQ(r["tool_calls"], 100);
}

TEST_F(CodeModeTest, RefusalsAndErrorsAreToolErrorsWithTheirReason) {
  json r = s().Exec(R"(
import mcp_tools
def why(f):
    try:
        f()
        return "no error"
    except mcp_tools.ToolError as e:
        return str(e)
print(why(lambda: mcp_tools.call("everything", "get-env", {})))
print(why(lambda: mcp_tools.call("nowhere", "echo", {})))
print(why(lambda: mcp_tools.everything.get_sum(a="x", b=1)))
print(why(lambda: mcp_tools.everything.echo()))
print(why(lambda: mcp_tools.everything.gzip_file_as_resource(data="http://127.0.0.1:9/x")))
print(hasattr(mcp_tools.everything, "get_env"))
)");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  const std::string out = r["stdout"];
  EXPECT_TRUE(Has(out, "tool 'get-env' of upstream 'everything' is not allowed")) << out;
  EXPECT_TRUE(Has(out, "there is no upstream named 'nowhere' (upstreams: everything)")) << out;
  EXPECT_TRUE(Has(out, "bad arguments for everything.get-sum")) << out;
  EXPECT_TRUE(Has(out, "bad arguments for everything.echo")) << out;
  // The upstream's own error result (isError), its text as the message.
  EXPECT_TRUE(Has(out, "not in the allowed domains list")) << out;
  EXPECT_TRUE(Has(out, "\nFalse\n")) << out;
}

TEST_F(CodeModeTest, HelpShowsTheDescriptionAndTheSchema) {
  json r = s().Exec(R"(
import inspect, mcp_tools
print(inspect.signature(mcp_tools.everything.get_sum))
print(mcp_tools.everything)
help(mcp_tools.everything.get_structured_content)
)");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  const std::string out = r["stdout"];
  EXPECT_TRUE(Has(out, "(*, a, b)\n")) << out;
  EXPECT_TRUE(Has(out, "<mcp_tools.everything: echo, get_structured_content, get_sum")) << out;
  EXPECT_TRUE(Has(out, "\"enum\": [")) << out;
  EXPECT_TRUE(Has(out, "Chicago")) << out;
  EXPECT_EQ(r["tool_calls"], 0);
}

// Issue 37, point 7: a mistake names itself: the tool or upstream that is
// not there (with the nearest that is), the keyword missing or of another
// type (what the schema wants, what came); help() on an upstream lists its
// tools and what each returns, without the class machinery.
TEST_F(CodeModeTest, MistakesNameThemselvesAndHelpListsTheTools) {
  json r = s().Exec(R"(
import mcp_tools
def why(f):
    try:
        f()
        return "no error"
    except Exception as e:
        return type(e).__name__ + ": " + str(e)
print(why(lambda: mcp_tools.everything.get_summ))
print(why(lambda: mcp_tools.everythin))
print(why(lambda: mcp_tools.everything.get_sum(a="x", b=1)))
print(why(lambda: mcp_tools.everything.get_sum(a=1)))
help(mcp_tools.everything)
)");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  const std::string out = r["stdout"];
  EXPECT_TRUE(Has(out,
                  "AttributeError: mcp_tools.everything has no tool 'get_summ' (did you "
                  "mean get_sum?); its tools: echo, get_structured_content, get_sum"))
      << out;
  EXPECT_TRUE(Has(out,
                  "AttributeError: mcp_tools has no upstream 'everythin' (did you mean "
                  "everything?)"))
      << out;
  EXPECT_TRUE(Has(out,
                  "ToolError: bad arguments for everything.get-sum: a must be a number, not "
                  "str ('x')"))
      << out;
  EXPECT_TRUE(Has(out, "ToolError: bad arguments for everything.get-sum: b (number) is required"))
      << out;
  EXPECT_TRUE(Has(out, "FUNCTIONS")) << out;
  EXPECT_TRUE(Has(out, "get_sum(*, a, b)")) << out;
  EXPECT_TRUE(Has(out,
                  "Returns a dict: {'conditions': string, 'humidity': number, "
                  "'temperature': number}"))
      << out;
  EXPECT_FALSE(Has(out, "__weakref__")) << out;
  EXPECT_FALSE(Has(out, "__dict__")) << out;
  EXPECT_EQ(r["tool_calls"], 0) << "every mistake was named before a call went out";
}

TEST_F(CodeModeTest, TheDescriptionListsTheToolsInOneLine) {
  json tools = s().Request("tools/list", json::object())["result"]["tools"];
  const std::string d = tools[0]["description"];
  EXPECT_TRUE(Has(d, "`import mcp_tools`")) << d;
  EXPECT_TRUE(Has(d, "help(mcp_tools.SERVER.TOOL)")) << d;
  EXPECT_TRUE(Has(d,
                  "- mcp_tools.everything (5 tools): echo, get_structured_content, get_sum, "
                  "get_tiny_image, gzip_file_as_resource"))
      << d;
  EXPECT_TRUE(Has(d, "at most 100 nested calls")) << d;
}

TEST_F(CodeModeTest, ASessionUsesToolsOverSeveralCellsAndFromThreads) {
  json a = s().Exec("import mcp_tools\nfirst = mcp_tools.everything.echo(message='one')",
                    {{"session", "new"}});
  ASSERT_EQ(a["exit_code"], 0) << a.dump();
  const std::string handle = a["session"];
  json b = s().Exec("second = mcp_tools.everything.echo(message='two')\nprint(first, second)",
                    {{"session", handle}});
  EXPECT_EQ(b["stdout"], "Echo: one Echo: two\n") << b.dump();
  EXPECT_EQ(b["tool_calls"], 1);
  json c = s().Exec(R"(
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(8) as pool:
    sums = list(pool.map(lambda i: mcp_tools.everything.get_sum(a=i, b=0), range(40)))
print(len(sums), sums[7])
)",
                    {{"session", handle}});
  EXPECT_EQ(c["stdout"], "40 The sum of 7 and 0 is 7.\n") << c.dump();
  EXPECT_EQ(c["tool_calls"], 40);
}

TEST_F(CodeModeTest, TheSecretStaysWithTheUpstream) {
  json r = s().Exec(R"(
import os, glob, mcp_tools
seen = [k for k, v in os.environ.items() if "upstream-secret" in v]
leaks = []
for path in glob.glob("/proc/*/environ"):
    try:
        if b"upstream-secret" in open(path, "rb").read():
            leaks.append(path)
    except OSError:
        pass
try:
    env = mcp_tools.call("everything", "get-env", {})
except mcp_tools.ToolError as e:
    env = str(e)
print(seen, leaks, "upstream-secret" in str(env))
)");
  EXPECT_EQ(r["stdout"], "[] [] False\n") << r.dump();
  EXPECT_FALSE(Has(r.dump(), kSecret));
  EXPECT_TRUE(s().StderrHas("\"event\":\"tool_call\""));
  EXPECT_FALSE(Has(s().Stderr(), kSecret));
}

TEST_F(CodeModeTest, TheRunStillHasNoNetwork) {
  json r = s().Exec(R"(
import socket, mcp_tools
mcp_tools.everything.echo(message="channel works")
for family in (socket.AF_INET, socket.AF_INET6):
    try:
        socket.socket(family, socket.SOCK_STREAM).connect(("127.0.0.1", 9))
        print("connected")
    except OSError as e:
        print("refused", type(e).__name__)
)");
  EXPECT_EQ(r["stdout"], "refused PermissionError\nrefused PermissionError\n") << r.dump();
}

TEST(CodeModeBoundsTest, TheNestedCallBoundAndTheResultSize) {
  const std::string config = WriteUpstreams({{"everything", StdioEverything(kAllow)}});
  ServerProcess s({{"MCP_EXEC_UPSTREAMS", config},
                   {"MCP_EXEC_MAX_TOOL_CALLS", "5"},
                   {"MCP_EXEC_MAX_TOOL_RESULT_BYTES", "1024"}});
  s.Initialize();
  json r = s.Exec(R"(
import mcp_tools
done = 0
try:
    for i in range(10):
        mcp_tools.everything.echo(message=str(i))
        done += 1
except mcp_tools.ToolError as e:
    print(done, e)
)");
  EXPECT_EQ(r["tool_calls"], 5) << r.dump();
  EXPECT_TRUE(Has(r["stdout"], "5 this call has made its 5 nested tool calls")) << r.dump();
  EXPECT_TRUE(Has(r["stdout"], "MCP_EXEC_MAX_TOOL_CALLS")) << r.dump();
  json big = s.Exec(R"(
import mcp_tools
try:
    mcp_tools.everything.get_tiny_image()
except mcp_tools.ToolError as e:
    print(e)
)");
  EXPECT_TRUE(Has(big["stdout"], "more than MCP_EXEC_MAX_TOOL_RESULT_BYTES (1024)")) << big.dump();
  // Arguments past what one call may send are refused in the run, and the
  // channel stays open for the next call.
  json args = s.Exec(R"(
import mcp_tools
try:
    mcp_tools.everything.echo(message="x" * 100000)
except mcp_tools.ToolError as e:
    print(e)
print(mcp_tools.everything.echo(message="small"))
)");
  EXPECT_TRUE(Has(args["stdout"], "more than the 69632 one call may send")) << args.dump();
  EXPECT_TRUE(Has(args["stdout"], "\nEcho: small\n")) << args.dump();
  unlink(config.c_str());
}

TEST(CodeModeBoundsTest, ACallPastTheDeadlineIsRefusedAndTheRunTimesOut) {
  const std::string config = WriteUpstreams({{"everything", StdioEverything(kAllow)}});
  ServerProcess s({{"MCP_EXEC_UPSTREAMS", config}});
  s.Initialize();
  json r = s.Exec(R"(
import mcp_tools, time
n = 0
while True:
    mcp_tools.everything.echo(message="x")
    n += 1
    time.sleep(0.2)
)",
                  {{"timeout_s", 1}});
  EXPECT_EQ(r["timed_out"], true) << r.dump();
  EXPECT_LE(r["tool_calls"].get<int>(), 6) << r.dump();
  unlink(config.c_str());
}

// Code mode over HTTP: beyond loopback without a token, the start stops
// before anything listens, saying both ways out (a token, or a loopback
// address: http_policy's unit test has those; the code-mode HTTP tests
// start on 127.0.0.1).
TEST(CodeModeStartTest, HttpBeyondLoopbackWithoutATokenStopsTheStart) {
  const std::string config = WriteUpstreams({{"everything", StdioEverything(kAllow)}});
  for (const std::string addr : {"", "MCP_EXEC_ADDR=0.0.0.0:8080 "}) {
    CommandResult r = RunBare("MCP_EXEC_TRANSPORT=http " + addr + "MCP_EXEC_UPSTREAMS=" + config +
                              " " + ServerBinary());
    EXPECT_EQ(r.status, 1) << addr << r.err;
    EXPECT_TRUE(Has(r.err, "beyond loopback, without MCP_EXEC_AUTH_TOKEN")) << r.err;
    EXPECT_TRUE(Has(r.err, "MCP_EXEC_ADDR=127.0.0.1:8080")) << r.err;
    EXPECT_FALSE(Has(r.err, "\"listening\"")) << "nothing listened: " << r.err;
  }
  unlink(config.c_str());
}

// A hand-edited upstreams file's mistake is said before the warm-up, with
// its line and column.
TEST(CodeModeStartTest, AMalformedUpstreamsFileIsSaidAtOnceWithItsLineAndColumn) {
  char path[] = "/tmp/mcp-exec-upstreams-XXXXXX";
  int fd = mkstemp(path);
  const std::string text = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n  }\n}\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  CommandResult r = RunBare(std::string("MCP_EXEC_UPSTREAMS=") + path + " " + ServerBinary());
  unlink(path);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(
      Has(r.err, std::string("MCP_EXEC_UPSTREAMS: ") + path + ": parse error at line 4, column 3"))
      << r.err;
  EXPECT_FALSE(Has(r.err, "json.exception")) << r.err;
  EXPECT_FALSE(Has(r.err, "zygote_ready")) << "said before the warm-up: " << r.err;
}

TEST(CodeModeStartTest, ABadUpstreamStopsTheStartNamingIt) {
  struct Case {
    json servers;
    std::string needle;
  };
  const Case cases[] = {
      {{{"broken", {{"command", "/nonexistent/mcp-server"}}}}, "upstream 'broken'"},
      {{{"quits", {{"command", "sh"}, {"args", {"-c", "echo bye >&2; exit 3"}}}}},
       "upstream 'quits' (command sh) could not be started"},
      {{{"everything", StdioEverything({"no-such-tool"})}},
       "upstream 'everything': \"allow\" names 'no-such-tool'"},
      {{{"web", {{"url", "http://127.0.0.1:9/mcp"}}}},
       "upstream 'web' (url http://127.0.0.1:9/mcp) could not be started"},
      {{{"ftp", {{"url", "ftp://127.0.0.1:9/mcp"}}}},
       "upstream 'ftp': \"url\" must start with https:// or http://"},
      {{{"both", {{"url", "http://127.0.0.1:9/"}, {"command", "x"}}}}, "upstream 'both'"},
  };
  for (const Case& c : cases) {
    const std::string config = WriteUpstreams(c.servers);
    ServerProcess s({{"MCP_EXEC_UPSTREAMS", config}});
    EXPECT_NE(s.Wait(60000), 0) << c.servers.dump();
    const std::string err = s.Stderr();
    EXPECT_TRUE(Has(err, "MCP_EXEC_UPSTREAMS: ")) << err;
    EXPECT_TRUE(Has(err, c.needle)) << c.needle << "\n" << err;
    unlink(config.c_str());
  }
}

// server-everything's streamable HTTP mode on 127.0.0.1 (tests/upstreams/
// loopback.mjs makes its listen() bind loopback only).
class HttpUpstream {
 public:
  HttpUpstream() {
    // A port FreePort found may be taken before node binds it (a test
    // process side by side): node then exits, and it starts on another.
    for (int attempt = 0; attempt < 5 && !ready_; ++attempt) {
      port_ = FreePort();
      Start();
    }
    EXPECT_TRUE(ready_) << "the HTTP upstream never listened";
  }
  ~HttpUpstream() { Stop(); }
  // A restart forgets every MCP session the server had; the port stays (the
  // URL is the server's), tried again for a while if something took it.
  void Restart() {
    Stop();
    for (int attempt = 0; attempt < 10 && !ready_; ++attempt) {
      if (attempt > 0) usleep(200000);
      Start();
    }
    EXPECT_TRUE(ready_) << "the HTTP upstream did not listen again on " << port_;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }
  int port() const { return port_; }

 private:
  void Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
    ready_ = false;
  }
  // Ready: our own node is alive and the port takes connections (not
  // merely something on the port).
  void Start() {
    pid_ = fork();
    if (pid_ == 0) {
      setenv("PORT", std::to_string(port_).c_str(), 1);
      const std::string preload = std::string(MCP_EXEC_UPSTREAMS_DIR) + "/loopback.mjs";
      int null_fd = open("/dev/null", O_WRONLY);
      dup2(null_fd, 1);
      dup2(null_fd, 2);
      execlp("node", "node", "--import", preload.c_str(), EverythingJs().c_str(), "streamableHttp",
             nullptr);
      _exit(127);
    }
    bool exited = false;
    const bool answered = WaitUntil(
        [&] {
          if (waitpid(pid_, nullptr, WNOHANG) == pid_) return exited = true;
          int fd = socket(AF_INET, SOCK_STREAM, 0);
          sockaddr_in a{};
          a.sin_family = AF_INET;
          a.sin_port = htons(static_cast<uint16_t>(port_));
          a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
          bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
          close(fd);
          return ok;
        },
        20000);
    if (exited) pid_ = -1;
    ready_ = answered && !exited;
  }

  int port_ = 0;
  pid_t pid_ = -1;
  bool ready_ = false;
};

TEST(CodeModeHttpTest, AStreamableHttpUpstreamOnLoopback) {
  HttpUpstream upstream;
  const std::string config =
      WriteUpstreams({{"web",
                       {{"url", upstream.url()},
                        {"headers", {{"Authorization", "Bearer " + kSecret}}},
                        {"allow", {"echo", "get-sum", "get-structured-content"}}}}});
  ServerProcess s({{"MCP_EXEC_UPSTREAMS", config}});
  s.Initialize();
  json r = s.Exec(
      "import mcp_tools, socket\n"
      "print(mcp_tools.web.echo(message='over http'))\n"
      "print(mcp_tools.web.get_structured_content(location='New York')['humidity'] "
      ">= 0)\n"
      "print(sum(1 for i in range(30) if mcp_tools.call('web', 'get-sum', "
      "{'a': i, 'b': 1}).endswith(f'is {i + 1}.')))\n"
      "try:\n"
      "    socket.create_connection(('127.0.0.1', " +
      std::to_string(upstream.port()) +
      "))\n    print('reached the upstream directly')\n"
      "except OSError as e:\n    print('no direct way', type(e).__name__)\n");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["stdout"], "Echo: over http\nTrue\n30\nno direct way PermissionError\n") << r.dump();
  EXPECT_EQ(r["tool_calls"], 32);
  // The upstream restarts and forgets its sessions: the next call does a new
  // handshake and goes through.
  upstream.Restart();
  json again = s.Exec("import mcp_tools\nprint(mcp_tools.web.echo(message='again'))");
  EXPECT_EQ(again["stdout"], "Echo: again\n") << again.dump();
  EXPECT_TRUE(s.StderrHas("\"transport\":\"http\""));
  EXPECT_FALSE(Has(s.Stderr(), kSecret));
  EXPECT_FALSE(Has(r.dump(), kSecret));
  unlink(config.c_str());
}

TEST(CodeModeRestartTest, AStdioUpstreamThatDiesIsStartedAgain) {
  const std::string config = WriteUpstreams({{"everything", StdioEverything(kAllow)}});
  ServerProcess s({{"MCP_EXEC_UPSTREAMS", config}});
  s.Initialize();
  EXPECT_EQ(s.Exec("import mcp_tools\nprint(mcp_tools.everything.echo(message='1'))")["stdout"],
            "Echo: 1\n");
  // This server's upstream: another test process may run one of its own.
  auto upstreams_of_server = [&] {
    std::vector<pid_t> mine;
    const std::vector<pid_t> children = ChildrenOf(s.pid(), false);
    for (pid_t p : PidsWithCmdlineContaining(EverythingJs())) {
      if (std::find(children.begin(), children.end(), p) != children.end()) mine.push_back(p);
    }
    return mine;
  };
  std::vector<pid_t> upstreams = upstreams_of_server();
  ASSERT_EQ(upstreams.size(), 1u);
  kill(upstreams[0], SIGKILL);
  ASSERT_TRUE(WaitUntil([&] { return !ProcessExists(upstreams[0]); }, 10000));
  usleep(200 * 1000);  // its stdout's EOF reaches the client's reader
  json r = s.Exec("import mcp_tools\nprint(mcp_tools.everything.echo(message='2'))");
  EXPECT_EQ(r["stdout"], "Echo: 2\n") << r.dump();
  EXPECT_EQ(upstreams_of_server().size(), 1u);
  unlink(config.c_str());
}

TEST(CodeModeOffTest, WithoutUpstreamsImportSaysWhy) {
  ServerProcess s;
  s.Initialize();
  json r = s.Exec("import mcp_tools");
  EXPECT_EQ(r["exit_code"], 1) << r.dump();
  EXPECT_TRUE(Has(r["stderr"], "MCP_EXEC_UPSTREAMS is not set")) << r.dump();
  EXPECT_FALSE(r.contains("tool_calls")) << r.dump();
}

}  // namespace
}  // namespace mcpexec::testing

namespace mcpexec::testing {
namespace {

// Over streamable HTTP: the nested calls show in /metrics per upstream and
// outcome, the run's own result counts them.
class CodeModeMetricsTest : public HttpServerTest {};

TEST_F(CodeModeMetricsTest, NestedCallsAreCountedPerUpstreamAndOutcome) {
  const std::string config = WriteUpstreams({{"everything", StdioEverything(kAllow)}});
  Start({{"MCP_EXEC_UPSTREAMS", config}});
  const std::string sid = Initialize();
  json req = {{"jsonrpc", "2.0"},
              {"id", 7},
              {"method", "tools/call"},
              {"params",
               {{"name", "exec"},
                {"arguments",
                 {{"code",
                   "import mcp_tools\n"
                   "for i in range(12):\n"
                   "    mcp_tools.everything.echo(message=str(i))\n"
                   "try:\n"
                   "    mcp_tools.call('everything', 'get-env', {})\n"
                   "except mcp_tools.ToolError as e:\n"
                   "    print('refused')\n"}}}}}};
  auto r = Client().Post("/mcp", With(Session(sid)), req.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200);
  json out = Message(r->body)["result"]["structuredContent"];
  EXPECT_EQ(out["stdout"], "refused\n") << out.dump();
  EXPECT_EQ(out["tool_calls"], 13);
  EXPECT_EQ(Metric("mcp_exec_tool_calls_total{upstream=\"everything\",outcome=\"ok\"}"), 12);
  EXPECT_EQ(Metric("mcp_exec_tool_calls_total{upstream=\"everything\",outcome=\"refused\"}"), 1);
  EXPECT_EQ(Metric("mcp_exec_tool_calls_total{upstream=\"everything\",outcome=\"failed\"}"), 0);
  EXPECT_EQ(Metric("mcp_exec_tool_call_duration_seconds_count{upstream=\"everything\"}"), 13);
  unlink(config.c_str());
}

}  // namespace
}  // namespace mcpexec::testing
