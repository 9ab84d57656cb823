// Issue 36: nothing a run or a client sends can take the server down. Each
// test drives the built binary with what a hostile client or run sent (deep
// JSON in a client's message on stdio and HTTP, in a run's tool-channel
// frame, in an upstream's answer; strings long enough to make std::regex
// recurse; run-chosen names meant for /metrics; floods of frames), then
// checks the answer says why and the server goes on. The code-mode ones use
// tests/upstreams/tiny_upstream.py, a standard-library MCP server whose
// tools' schemas hold "format": "date-time", a "pattern" and
// "patternProperties".
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "http_harness.h"
#include "server_process.h"

namespace mcpexec::testing {
namespace {

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

std::string Nested(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

std::string TinyConfig() {
  char path[] = "/tmp/mcp-exec-tiny-upstreams-XXXXXX";
  int fd = mkstemp(path);
  const std::string text =
      json{{"mcpServers",
            {{"tiny",
              {{"command", "/usr/bin/python3"},
               {"args", {std::string(MCP_EXEC_UPSTREAMS_DIR) + "/tiny_upstream.py"}}}}}}}
          .dump();
  EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  return path;
}

// Python that sends raw frames on the run's tool channel and reads the
// answers: what a hostile run can do without mcp_tools.
const char* kRawFrames = R"(
import json, os, struct
import mcp_exec_runtime as rt
fd = rt.tools._tools["fd"]
def read_exactly(n):
    out = b""
    while len(out) < n:
        got = os.read(fd, n - len(out))
        if not got:
            raise EOFError("closed")
        out += got
    return out
def send(body):
    data = struct.pack("<I", len(body)) + body
    while data:
        data = data[os.write(fd, data):]
def roundtrip(body):
    send(body)
    n = struct.unpack("<I", read_exactly(4))[0]
    return json.loads(read_exactly(n))
)";

class RobustnessTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (!config_.empty()) unlink(config_.c_str());
  }
  ServerProcess& WithTiny(Env extra = {}) {
    config_ = TinyConfig();
    extra["MCP_EXEC_UPSTREAMS"] = config_;
    server_ = std::make_unique<ServerProcess>(extra);
    server_->Initialize();
    return *server_;
  }
  std::string config_;
  std::unique_ptr<ServerProcess> server_;
};

// Point 1: 100,000 nested arrays in a frame's arguments (a 200 KB frame)
// crashed the supervisor (the value was copied, recursively, before any
// check). Now the frame is refused under its id before a value exists; the
// channel stays, the server answers the next call.
TEST_F(RobustnessTest, ADeepToolChannelFrameIsRefusedUnderItsId) {
  ServerProcess& s = WithTiny();
  const std::string code =
      std::string(kRawFrames) +
      "deep = '{\"id\": 5, \"op\": \"call\", \"server\": \"nobody\", \"tool\": \"x\", "
      "\"arguments\": {\"a\": ' + '[' * 100000 + ']' * 100000 + '}}'\n"
      "print(json.dumps(roundtrip(deep.encode())))\n"
      "print(json.dumps(roundtrip(b'{\"id\": 6, \"op\": \"list\"}'))[:40])\n";
  json r = s.Exec(code, {{"timeout_s", 60}});
  ASSERT_EQ(r["exit_code"], 0) << r.dump();
  const std::string out = r["stdout"];
  const size_t nl = out.find('\n');
  json first = json::parse(out.substr(0, nl), nullptr, false);
  EXPECT_EQ(first["id"], 5) << out;
  EXPECT_EQ(first["ok"], false) << out;
  EXPECT_TRUE(Has(first.value("error", ""), "deeper than 64 levels")) << out;
  EXPECT_TRUE(Has(out.substr(nl), "\"id\": 6, \"ok\": true")) << "the channel stays: " << out;
  EXPECT_EQ(s.Exec("print('alive')")["stdout"], "alive\n");
}

// Point 2, stdio: a request with 100,000 nested brackets in params (even a
// ping) crashed the server. It is refused with its id and the bound named.
TEST_F(RobustnessTest, ADeepClientMessageIsRefusedWithItsIdOverStdio) {
  ServerProcess s;
  s.Initialize();
  s.SendRaw(R"({"jsonrpc":"2.0","id":"deep-1","method":"ping","params":{"x":)" + Nested(100000) +
            "}}");
  json r = s.WaitForId("deep-1", 30000);
  EXPECT_EQ(r["error"]["code"], -32600) << r.dump();
  EXPECT_TRUE(Has(r["error"]["message"], "deeper than 64 levels")) << r.dump();
  // 64 levels are fine (the message, params and 62 arrays); 65 are not.
  s.SendRaw(R"({"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":)" + Nested(62) + "}}");
  EXPECT_TRUE(s.WaitForId(8, 30000).contains("result"));
  s.SendRaw(R"({"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":)" + Nested(63) + "}}");
  EXPECT_EQ(s.WaitForId(9, 30000)["error"]["code"], -32600);
  EXPECT_EQ(s.Exec("print('alive')")["stdout"], "alive\n");
}

class RobustnessHttpTest : public HttpServerTest {};

// Point 2, HTTP: the same message over streamable HTTP, in a session and
// without one; and to the legacy SSE endpoint.
TEST_F(RobustnessHttpTest, ADeepClientMessageIsRefusedWithItsIdOverHttp) {
  Start();
  const std::string deep =
      R"({"jsonrpc":"2.0","id":41,"method":"ping","params":{"x":)" + Nested(100000) + "}}";
  auto r = Client().Post("/mcp", With(kMcpHeaders), deep, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  json m = json::parse(r->body, nullptr, false);
  EXPECT_EQ(m["id"], 41) << r->body;
  EXPECT_TRUE(Has(m["error"]["message"], "deeper than 64 levels")) << r->body;
  const std::string sid = Initialize();
  r = Client().Post("/mcp", With(Session(sid)), deep, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  auto ok = Client().Post("/mcp", With(Session(sid)), R"({"jsonrpc":"2.0","id":2,"method":"ping"})",
                          "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

// Point 10: shares keyed on the connection let a client that makes a
// connection per call (every 2026-07-28 call is one) take every other
// client's idle sessions, and a 2025 client holding 3 of 4 sessions took
// another client's only one instead of its own. They key on the client (its
// address and clientInfo name) now, and the one holding the most gives way.
TEST_F(RobustnessHttpTest, FairSharesKeyOnTheClientNotTheConnection) {
  Start({{"MCP_EXEC_MAX_PY_SESSIONS", "4"}});
  auto initialize = [&](const std::string& name) {
    json init = {{"jsonrpc", "2.0"},
                 {"id", 1},
                 {"method", "initialize"},
                 {"params",
                  {{"protocolVersion", "2025-06-18"},
                   {"capabilities", json::object()},
                   {"clientInfo", {{"name", name}, {"version", "1"}}}}}};
    auto r = Client().Post("/mcp", With(kMcpHeaders), init.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200);
    const std::string sid = r ? r->get_header_value("Mcp-Session-Id") : "";
    Client().Post("/mcp", With(Session(sid)),
                  R"({"jsonrpc":"2.0","method":"notifications/initialized"})", "application/json");
    return sid;
  };
  int next_id = 10;
  auto cell = [&](const std::string& sid, const std::string& session) {
    json req = {
        {"jsonrpc", "2.0"},
        {"id", next_id++},
        {"method", "tools/call"},
        {"params", {{"name", "exec"}, {"arguments", {{"code", "x = 1"}, {"session", session}}}}}};
    auto r = Client().Post("/mcp", With(Session(sid)), req.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200);
    return r ? Message(r->body)["result"]["structuredContent"] : json();
  };
  const std::string y = initialize("client-y");
  ASSERT_EQ(cell(y, "y1")["session_new"], true);  // the least recently used of all
  const std::string x = initialize("client-x");
  for (const char* name : {"x1", "x2", "x3"}) ASSERT_EQ(cell(x, name)["session_new"], true);
  // The pool is full: x's fourth takes x's own oldest, not y's only one.
  ASSERT_EQ(cell(x, "x4")["session_new"], true);
  EXPECT_EQ(cell(x, "x1")["session_new"], true) << "x1 gave way (and x2 for it now)";
  EXPECT_EQ(cell(y, "y1")["session_new"], false) << "y's only session stays";
  // A 2026-07-28 client: a connection per call, one client all the same.
  for (int i = 0; i < 3; ++i) {
    json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                 {"io.modelcontextprotocol/clientCapabilities", json::object()},
                 {"io.modelcontextprotocol/clientInfo", {{"name", "client-s"}, {"version", "1"}}}};
    json req = {{"jsonrpc", "2.0"},
                {"id", 100 + i},
                {"method", "tools/call"},
                {"params",
                 {{"name", "exec"},
                  {"arguments", {{"code", "x = 1"}, {"session", "new"}}},
                  {"_meta", meta}}}};
    httplib::Headers h = kMcpHeaders;
    h.emplace("MCP-Protocol-Version", "2026-07-28");
    h.emplace("Mcp-Method", "tools/call");
    h.emplace("Mcp-Name", "exec");
    h.emplace("Mcp-Param-Session", "new");
    auto r = Client().Post("/mcp", With(h), req.dump(), "application/json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    EXPECT_EQ(Message(r->body)["result"]["structuredContent"]["session_new"], true) << r->body;
  }
  EXPECT_EQ(cell(y, "y1")["session_new"], false) << "y's only session outlived client-s's three";
  EXPECT_GE(Metric("mcp_exec_session_evictions_total{table=\"python\"}"), 5);
}

// Point 13: connections that never finish their header held every slot
// (1,024) for the header timeout, and reconnecting kept everyone out without
// a token. Past 8 such connections of an address, its newcomers displace
// its oldest silent for 2 s, and past a quarter of the slots the oldest of
// the address holding the most gives way at once: a client that sends its
// request is served while 15 other addresses hold silent sockets.
TEST_F(RobustnessHttpTest, SilentConnectionsCannotKeepOthersOut) {
  // 700 descriptors: about 108 connection slots (the server keeps the rest
  // for runs), so 14 addresses of 8 silent sockets could fill them all.
  Start({}, "http", {"/usr/bin/prlimit", "--nofile=700:700", "--"});
  // An address's ninth silent connection displaces its first once that one
  // has been silent for the grace (closed at once, not at the 10 s header
  // timeout).
  std::vector<int> silent;
  for (int i = 0; i < 8; ++i) silent.push_back(ConnectRaw("127.0.0.200"));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  silent.push_back(ConnectRaw("127.0.0.200"));
  pollfd first{silent[0], POLLIN, 0};
  ASSERT_EQ(poll(&first, 1, 5000), 1) << "the first of the address is closed";
  char buf[64];
  EXPECT_EQ(read(silent[0], buf, sizeof buf), 0) << "without a word";
  // 14 more addresses of 8 silent connections each.
  for (int a = 2; a < 16; ++a) {
    const std::string from = "127.0.0." + std::to_string(a);
    for (int i = 0; i < 8; ++i) {
      int fd = ConnectRaw(from.c_str());
      if (fd >= 0) silent.push_back(fd);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Client().Get("/healthz");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r) << "no answer beside " << silent.size() << " silent connections";
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_LT(took, 5.0) << "served before the silent sockets' header timeout (10 s)";
  for (int fd : silent) close(fd);
}

// Point 3: a run's string against an upstream tool's "format": "date-time"
// (100,000 characters) or "pattern" (50 KB) crashed the supervisor inside
// std::regex. Patterns now run on RE2 and the formats on a scanner: the
// call is refused with the reason, and good values pass.
TEST_F(RobustnessTest, LongStringsAgainstSchemaPatternsAndFormatsAreCheckedSafely) {
  ServerProcess& s = WithTiny();
  json r = s.Exec(R"(
import mcp_tools
for call in (lambda: mcp_tools.tiny.when(at="1" * 100000),
             lambda: mcp_tools.tiny.match(word="a" * 50000 + "!"),
             lambda: mcp_tools.tiny.when(at="2026-02-30T10:00:00Z")):
    try:
        call()
        print("accepted")
    except mcp_tools.ToolError as e:
        print("refused:", str(e)[:160])
print(mcp_tools.tiny.when(at="2026-12-05T09:30:00.5+01:00"))
print(mcp_tools.tiny.match(word="a" * 50000))
print(mcp_tools.tiny.labels(labels={"x-" + "y" * 100000: "v"}))
)",
                  {{"timeout_s", 60}});
  ASSERT_EQ(r["exit_code"], 0) << r.dump();
  const std::string out = r["stdout"];
  EXPECT_TRUE(Has(out,
                  "refused: bad arguments for tiny.when: [at]: the string is not a valid "
                  "date-time"))
      << out;
  EXPECT_TRUE(Has(out,
                  "refused: bad arguments for tiny.match: [word]: the string does not match "
                  "the pattern ^[a-z]+$"))
      << out;
  EXPECT_TRUE(Has(out, "at 2026-12-05T09:30:00.5+01:00\n50000\nx-")) << out;
  EXPECT_EQ(s.Exec("print('alive')")["stdout"], "alive\n");
}

// An upstream's answer nested too deep fails that call, saying why; the
// server and the upstream go on.
TEST_F(RobustnessTest, ADeepUpstreamAnswerFailsItsCallOnly) {
  ServerProcess& s = WithTiny();
  json r = s.Exec(R"(
import mcp_tools
try:
    mcp_tools.tiny.deep(levels=100000)
    print("accepted")
except mcp_tools.ToolError as e:
    print("refused:", e)
print(mcp_tools.tiny.deep(levels=3))
)",
                  {{"timeout_s", 60}});
  ASSERT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_TRUE(Has(r["stdout"], "refused: upstream 'tiny' did not answer deep: ")) << r.dump();
  EXPECT_TRUE(Has(r["stdout"], "deeper than 64 levels")) << r.dump();
  EXPECT_TRUE(Has(r["stdout"], "[[[]]]")) << r.dump();
}

// Point 6: list frames were not counted (187,000 in 8 s). Every frame
// counts: past MCP_EXEC_MAX_TOOL_CALLS calls and 64 more frames the channel
// ends, saying why, and the run goes on without it.
TEST_F(RobustnessTest, EveryFrameCountsAgainstTheChannelsBudget) {
  ServerProcess& s = WithTiny({{"MCP_EXEC_MAX_TOOL_CALLS", "10"}});
  json r = s.Exec(std::string(kRawFrames) + R"(
answered, last = 0, None
try:
    for i in range(100000):
        a = roundtrip(json.dumps({"id": i + 1, "op": "list"}).encode())
        if a.get("ok"):
            answered += 1
        else:
            last = a
            break
except (EOFError, OSError) as e:
    last = str(e)
print(answered)
print(json.dumps(last))
)",
                  {{"timeout_s", 60}});
  ASSERT_EQ(r["exit_code"], 0) << r.dump();
  const std::string out = r["stdout"];
  EXPECT_EQ(out.substr(0, out.find('\n')), "74") << "10 calls and 64 more frames: " << out;
  EXPECT_TRUE(Has(out, "past the 74 frames")) << out;
  EXPECT_EQ(s.Exec("print('alive')")["stdout"], "alive\n");
}

// Point 7: a control character cut the output (`print('a\x00b')` came back
// "a\u0000b" with truncated true, `print('\x01x')` as "\u0001"): the
// answer's bound counted escaped bytes against the raw size. Every byte
// 0-31 and 127 now comes back whole under the default cap.
TEST_F(RobustnessTest, ControlCharactersComeBackWhole) {
  ServerProcess s;
  s.Initialize();
  json r = s.Exec("print('a\\x00b')");
  EXPECT_EQ(r["stdout"], std::string("a\0b\n", 4)) << r.dump();
  EXPECT_EQ(r["truncated"], false) << r.dump();
  r = s.Exec("print('\\x01x')");
  EXPECT_EQ(r["stdout"], "\x01x\n") << r.dump();
  EXPECT_EQ(r["truncated"], false) << r.dump();
  std::string expected;
  for (int b = 0; b < 32; ++b) expected += std::string("a") + static_cast<char>(b) + "b;";
  expected +=
      "a\x7f"
      "b;";
  r = s.Exec(
      "import sys\n"
      "sys.stdout.write(''.join('a' + chr(b) + 'b;' for b in list(range(32)) + [127]))\n"
      "sys.stderr.write(''.join('a' + chr(b) + 'b;' for b in list(range(32)) + [127]))\n");
  EXPECT_EQ(r["stdout"], expected) << r.dump();
  EXPECT_EQ(r["stderr"], expected) << r.dump();
  EXPECT_EQ(r["truncated"], false) << r.dump();
}

// Point 9: the sessions' processes were counted once a second, so a cell
// that left its children behind made the very next run's fork fail. They
// are counted when the cell ends, before its answer: the session that holds
// too many is ended then (the answer says why), and the next run forks.
TEST_F(RobustnessTest, ASessionsLeftoverChildrenAreCountedBeforeTheNextRun) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_PROCESSES", "48"}});
  s.Initialize();
  json held = s.Exec(R"(
import os, time
n = 0
try:
    for _ in range(100):
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        n += 1
except OSError:
    pass
print("left", n, "children")
)",
                     {{"session", "hog"}, {"timeout_s", 60}});
  // The cell may return (and print how many it left) before the zygote's
  // once-a-second pass, or that pass may end it while it still forks: either
  // way its answer says the session ended and why.
  ASSERT_TRUE(held.contains("session_ended")) << held.dump();
  EXPECT_TRUE(Has(held["session_ended"], "held more than half of MCP_EXEC_MAX_PROCESSES"))
      << held.dump();
  json next = s.Exec("import subprocess\nsubprocess.run(['true'], check=True)\nprint('forked')");
  EXPECT_EQ(next["stdout"], "forked\n") << "the very next run forks: " << next.dump();
  EXPECT_EQ(s.Exec("print(1)", {{"session", "hog"}})["session_new"], true);
}

// Point 5: a run's server name became a Prometheus label, unescaped and
// never freed: a name holding a quote, a brace and a newline forged series
// in /metrics, and 1 MiB names grew the supervisor by 2 MiB each. Labels
// now come from the configuration only ("unknown" for the rest); the
// supervisor's memory stays bounded under every flood of points 1-6.
class RobustnessMetricsTest : public HttpServerTest {
 protected:
  void TearDown() override {
    HttpServerTest::TearDown();
    if (!config_.empty()) unlink(config_.c_str());
  }
  std::string config_;
};

TEST_F(RobustnessMetricsTest, RunChosenNamesNeverReachMetricsAndMemoryStaysBounded) {
  config_ = TinyConfig();
  Start({{"MCP_EXEC_UPSTREAMS", config_}, {"MCP_EXEC_MAX_TOOL_CALLS", "1"}});
  const std::string sid = Initialize();
  auto exec = [&](const std::string& code, int id) {
    json req = {
        {"jsonrpc", "2.0"},
        {"id", id},
        {"method", "tools/call"},
        {"params", {{"name", "exec"}, {"arguments", {{"code", code}, {"timeout_s", 120}}}}}};
    auto r = Client().Post("/mcp", With(Session(sid)), req.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200);
    return r ? Message(r->body)["result"]["structuredContent"] : json();
  };
  const long rss_before = RssKiB(server_->pid());
  const std::string forge = R"(",outcome="ok"} 31337\nmcp_exec_runs_total{outcome="ok"} 999999)";
  for (int round = 0; round < 3; ++round) {
    json out = exec(std::string(kRawFrames) + R"(
import mcp_tools
try:
    mcp_tools.tiny.match(word="ok")
except mcp_tools.ToolError:
    pass
forge = )" + json(forge).dump() +
                        R"(
for name in [forge] + ["n" * (1 << 20) + str(i) for i in range(8)]:
    try:
        mcp_tools.call(name, "x", {})
    except mcp_tools.ToolError as e:
        pass
deep = '{"id": 99, "op": "call", "server": "tiny", "tool": "x", "arguments": {"a": ' + '[' * 100000 + ']' * 100000 + '}}'
try:
    roundtrip(deep.encode())
except Exception:
    pass
print("done")
)",
                    100 + round);
    EXPECT_EQ(out["stdout"], "done\n") << out.dump();
  }
  auto m = Client().Get("/metrics");
  ASSERT_TRUE(m && m->status == 200);
  EXPECT_FALSE(Has(m->body, "31337")) << "a forged series";
  EXPECT_FALSE(Has(m->body, "999999")) << "a forged series";
  EXPECT_FALSE(Has(m->body, "nnnnnnnn")) << "a run's name as a label";
  EXPECT_LT(m->body.size(), 64u * 1024) << "the body stays the size of its series";
  EXPECT_GE(Metric("mcp_exec_tool_calls_total{upstream=\"unknown\",outcome=\"refused\"}"), 27);
  EXPECT_GE(Metric("mcp_exec_tool_frames_refused_total{why=\"too deep\"}"), 3);
  const long rss_after = RssKiB(server_->pid());
  // The floods sent 27 MiB of names and 3 deep frames; none of it is kept.
  EXPECT_LT(rss_after - rss_before, 48 * 1024)
      << "supervisor RSS grew from " << rss_before << " KiB to " << rss_after << " KiB";
}

}  // namespace
}  // namespace mcpexec::testing
