// MCP 2026-07-28 on streamable HTTP (issue 21): no handshake and no session
// id; each request checked against its headers with its exact error; each
// POST answered on its own (JSON, or an event stream whose close cancels
// the call); subscriptions/listen acknowledged first and closed with the
// server; the 2025 era beside it in the same process.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "base/base64.h"
#include "http_harness.h"

namespace mcpexec::testing {
namespace {

constexpr const char* kVersion = "2026-07-28";

json Meta() {
  return {{"io.modelcontextprotocol/protocolVersion", kVersion},
          {"io.modelcontextprotocol/clientCapabilities", json::object()},
          {"io.modelcontextprotocol/clientInfo", {{"name", "stateless-test"}, {"version", "1"}}}};
}

json Request(const json& id, const std::string& method, json params = json::object()) {
  params["_meta"] = Meta();
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

json CallExec(const json& id, const std::string& code, int timeout_s = 30) {
  return Request(id, "tools/call",
                 {{"name", "exec"}, {"arguments", {{"code", code}, {"timeout_s", timeout_s}}}});
}

// The headers a client of the revision mirrors from the body.
httplib::Headers HeadersFor(const json& msg) {
  httplib::Headers h = kMcpHeaders;
  h.emplace("MCP-Protocol-Version", kVersion);
  h.emplace("Mcp-Method", msg["method"].get<std::string>());
  const json& p = msg["params"];
  if (msg["method"] == "tools/call" || msg["method"] == "prompts/get") {
    h.emplace("Mcp-Name", p["name"].get<std::string>());
  }
  if (msg["method"] == "resources/read") h.emplace("Mcp-Name", p["uri"].get<std::string>());
  return h;
}

class StatelessHttpTest : public HttpServerTest {
 protected:
  httplib::Result Post(const json& msg, httplib::Headers h) {
    return Client().Post("/mcp", With(std::move(h)), msg.dump(), "application/json");
  }
  httplib::Result Post(const json& msg) { return Post(msg, HeadersFor(msg)); }

  // The status, the JSON-RPC error code and the id of a refusal.
  void ExpectRefused(const httplib::Result& r, int status, int code, const json& id) {
    ASSERT_TRUE(r) << "no answer";
    EXPECT_EQ(r->status, status) << r->body;
    json m = Message(r->body);
    EXPECT_EQ(m.value("id", json()), id) << r->body;
    EXPECT_EQ(m["error"].value("code", 0), code) << r->body;
  }

  // Writes msg as a POST on a raw connection (for streams the client must
  // read as they come, or leave).
  int RawPost(const json& msg, const httplib::Headers& headers) {
    int fd = ConnectRaw();
    if (fd < 0) return fd;
    std::string body = msg.dump();
    std::string http =
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
    for (const auto& [k, v] : headers) http += k + ": " + v + "\r\n";
    if (!token_.empty()) http += "X-MCP-AUTH: " + token_ + "\r\n";
    http += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (!SendAll(fd, http)) {
      close(fd);
      return -1;
    }
    return fd;
  }
};

// What comes on fd until `needle` or timeout_ms.
std::string ReadUntil(int fd, const std::string& needle, int timeout_ms) {
  std::string got;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (got.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

TEST_F(StatelessHttpTest, DiscoverNeedsNoHandshakeAndNoSessionId) {
  Start();
  json msg = Request(7, "server/discover");
  auto r = Post(msg);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_FALSE(r->has_header("Mcp-Session-Id")) << "the era has no session id";
  json m = Message(r->body);
  EXPECT_EQ(m["id"], 7);
  const json& res = m["result"];
  EXPECT_EQ(res["resultType"], "complete") << m.dump();
  EXPECT_EQ(res["supportedVersions"][0], kVersion) << m.dump();
  EXPECT_NE(res["supportedVersions"].dump().find("2025-11-25"), std::string::npos) << m.dump();
  EXPECT_TRUE(res["capabilities"].contains("tools")) << m.dump();
  EXPECT_EQ(res["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-exec") << m.dump();
  EXPECT_EQ(res["ttlMs"], 300000) << m.dump();
  EXPECT_EQ(res["cacheScope"], "public") << m.dump();
}

TEST_F(StatelessHttpTest, ACallRunsAndItsResultIsComplete) {
  Start();
  json msg = CallExec(3, "print(6 * 7)");
  httplib::Headers h = HeadersFor(msg);
  h.emplace("Mcp-Session-Id", "0123456789abcdef0123456789abcdef");  // ignored in this era
  auto r = Post(msg, h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_FALSE(r->has_header("Mcp-Session-Id"));
  json m = Message(r->body);
  EXPECT_EQ(m["id"], 3);
  EXPECT_EQ(m["result"]["resultType"], "complete") << m.dump();
  EXPECT_EQ(m["result"]["structuredContent"]["stdout"], "42\n") << m.dump();
  // The list, with its cache hints.
  auto l = Post(Request(4, "tools/list"));
  ASSERT_TRUE(l);
  json lm = Message(l->body);
  EXPECT_EQ(lm["result"]["tools"][0]["name"], "exec") << l->body;
  EXPECT_EQ(lm["result"]["ttlMs"], 300000) << l->body;
}

// Each rung of the ladder, in its order, with its exact status and code, and
// the request's own id.
TEST_F(StatelessHttpTest, EachBadEnvelopeHeaderAndVersionGetsItsExactError) {
  Start();
  json call = CallExec("c-1", "print(1)");
  // No _meta at all, the header naming the revision: -32602.
  json bare = {
      {"jsonrpc", "2.0"}, {"id", 11}, {"method", "tools/list"}, {"params", json::object()}};
  httplib::Headers bare_h = kMcpHeaders;
  bare_h.emplace("MCP-Protocol-Version", kVersion);
  bare_h.emplace("Mcp-Method", "tools/list");
  ExpectRefused(Post(bare, bare_h), 400, -32602, 11);
  // clientCapabilities missing: -32602, naming it.
  json no_caps = Request(12, "tools/list");
  no_caps["params"]["_meta"].erase("io.modelcontextprotocol/clientCapabilities");
  auto r = Post(no_caps);
  ExpectRefused(r, 400, -32602, 12);
  EXPECT_NE(r->body.find("clientCapabilities"), std::string::npos) << r->body;
  // The header's version against _meta's: -32020.
  httplib::Headers other = HeadersFor(call);
  other.erase("MCP-Protocol-Version");
  other.emplace("MCP-Protocol-Version", "2025-11-25");
  ExpectRefused(Post(call, other), 400, -32020, "c-1");
  // A version this server does not speak: -32022, with what it does.
  json future = Request(13, "tools/list");
  future["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01";
  httplib::Headers future_h = HeadersFor(future);
  future_h.erase("MCP-Protocol-Version");
  future_h.emplace("MCP-Protocol-Version", "2099-01-01");
  r = Post(future, future_h);
  ExpectRefused(r, 400, -32022, 13);
  json data = Message(r->body)["error"]["data"];
  EXPECT_EQ(data["requested"], "2099-01-01") << r->body;
  EXPECT_EQ(data["supported"][0], kVersion) << r->body;
  // Mcp-Method missing, or another than the body's: -32020.
  httplib::Headers no_method = HeadersFor(call);
  no_method.erase("Mcp-Method");
  ExpectRefused(Post(call, no_method), 400, -32020, "c-1");
  httplib::Headers wrong_method = HeadersFor(call);
  wrong_method.erase("Mcp-Method");
  wrong_method.emplace("Mcp-Method", "TOOLS/CALL");  // values are case-sensitive
  ExpectRefused(Post(call, wrong_method), 400, -32020, "c-1");
  // Mcp-Name missing, other, or badly encoded: -32020.
  httplib::Headers no_name = HeadersFor(call);
  no_name.erase("Mcp-Name");
  ExpectRefused(Post(call, no_name), 400, -32020, "c-1");
  httplib::Headers other_name = HeadersFor(call);
  other_name.erase("Mcp-Name");
  other_name.emplace("Mcp-Name", "eval");
  ExpectRefused(Post(call, other_name), 400, -32020, "c-1");
  httplib::Headers bad_b64 = HeadersFor(call);
  bad_b64.erase("Mcp-Name");
  bad_b64.emplace("Mcp-Name", "=?base64?ZX!!hlYw==?=");
  ExpectRefused(Post(call, bad_b64), 400, -32020, "c-1");
  // A method the revision removed: -32601, 404.
  ExpectRefused(Post(Request(14, "ping")), 404, -32601, 14);
  ExpectRefused(Post(Request(15, "logging/setLevel", {{"level", "info"}})), 404, -32601, 15);
  // Names case-insensitive, values trimmed, base64 of the right name: served.
  httplib::Headers loose = kMcpHeaders;
  loose.emplace("mcp-protocol-version", std::string(" ") + kVersion + "\t");
  loose.emplace("MCP-METHOD", "tools/call");
  loose.emplace("mcp-name", "=?base64?ZXhlYw==?=");
  r = Post(call, loose);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Message(r->body)["result"]["structuredContent"]["stdout"], "1\n") << r->body;
}

// Three POSTs at once, all with the same id: each gets its own answer.
TEST_F(StatelessHttpTest, PostsAtOnceWithTheSameIdEachGetTheirOwnAnswer) {
  Start({{"MCP_EXEC_MAX_CONCURRENT", "3"}});
  json answers[3];
  std::vector<std::thread> calls;
  for (int i = 0; i < 3; ++i) {
    calls.emplace_back([&, i] {
      auto r = Post(CallExec(1, "import time; time.sleep(0.5); print(" + std::to_string(i) + ")"));
      if (r) answers[i] = Message(r->body);
    });
  }
  for (auto& t : calls) t.join();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(answers[i]["id"], 1) << answers[i].dump();
    EXPECT_EQ(answers[i]["result"]["structuredContent"]["stdout"], std::to_string(i) + "\n")
        << answers[i].dump();
  }
}

// A call that asked for no progress sends nothing before its result: it is
// answered application/json, and a client that hangs up before the answer
// ends the run all the same (the connection is watched meanwhile).
TEST_F(StatelessHttpTest, ClosingACallsConnectionEndsItsRun) {
  Start();
  std::string marker = "4600." + Marker("");
  json msg = CallExec(21, "import subprocess; subprocess.run(['sleep', '" + marker + "'])", 120);
  int fd = RawPost(msg, HeadersFor(msg));
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WaitUntil([&] { return !PidsWithCmdlineContaining(marker).empty(); }, 20000));
  EXPECT_EQ(ReadUntil(fd, "\r\n\r\n", 500), "") << "nothing is sent before the answer";
  close(fd);
  EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdlineContaining(marker).empty(); }, 10000))
      << "the run outlived its connection";
}

TEST_F(StatelessHttpTest, ACallWithoutProgressIsAnsweredAsJson) {
  Start();
  json msg = CallExec(22, "import time; time.sleep(1.5); print('slept')");
  auto r = Post(msg);
  ASSERT_TRUE(r) << "no answer";
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json") << r->body;
  json m = json::parse(r->body);
  EXPECT_EQ(m["id"], 22) << r->body;
  EXPECT_EQ(m["result"]["structuredContent"]["stdout"], "slept\n") << r->body;
}

// With a progress token the call's messages come first: an event stream,
// which proxies must pass on at once.
TEST_F(StatelessHttpTest, ACallWithProgressIsAnsweredAsAStream) {
  Start();
  json msg = CallExec(23, "import time; time.sleep(1.5); print('slept')");
  msg["params"]["_meta"]["progressToken"] = "p-23";
  int fd = RawPost(msg, HeadersFor(msg));
  ASSERT_GE(fd, 0);
  std::string head = ReadUntil(fd, "\r\n\r\n", 10000);
  close(fd);
  EXPECT_NE(head.find("text/event-stream"), std::string::npos) << head;
  EXPECT_NE(head.find("X-Accel-Buffering: no"), std::string::npos) << head;
}

TEST_F(StatelessHttpTest, ProgressComesOnTheCallsOwnStream) {
  Start();
  json msg = CallExec(31,
                      "import time\nfor i in range(3):\n    print(i, flush=True)\n    "
                      "time.sleep(0.7)\n");
  msg["params"]["_meta"]["progressToken"] = "p-31";
  int fd = RawPost(msg, HeadersFor(msg));
  ASSERT_GE(fd, 0);
  std::string got = ReadUntil(fd, "\"resultType\"", 20000);
  close(fd);
  size_t progress = got.find("notifications/progress");
  size_t result = got.find("\"resultType\"");
  ASSERT_NE(result, std::string::npos) << got;
  ASSERT_NE(progress, std::string::npos) << got;
  EXPECT_LT(progress, result) << got;
  EXPECT_NE(got.find("p-31"), std::string::npos) << got;
}

// Acknowledged first, with the subscription's id; closed with the server.
TEST_F(StatelessHttpTest, ListenIsAcknowledgedFirstAndClosedWithTheServer) {
  Start();
  json msg =
      Request("sub-1", "subscriptions/listen", {{"notifications", {{"toolsListChanged", true}}}});
  int fd = RawPost(msg, HeadersFor(msg));
  ASSERT_GE(fd, 0);
  std::string got = ReadUntil(fd, "acknowledged", 5000);
  EXPECT_NE(got.find("200"), std::string::npos) << got;
  size_t ack = got.find("notifications/subscriptions/acknowledged");
  ASSERT_NE(ack, std::string::npos) << got;
  EXPECT_NE(got.find("\"io.modelcontextprotocol/subscriptionId\":\"sub-1\"", ack),
            std::string::npos)
      << got;
  // The stream stays open: a call beside it is answered.
  auto r = Post(CallExec(2, "print('beside')"));
  ASSERT_TRUE(r);
  EXPECT_EQ(Message(r->body)["result"]["structuredContent"]["stdout"], "beside\n");
  kill(server_->pid(), SIGTERM);
  std::string end = ReadUntil(fd, "\"resultType\"", 10000);
  close(fd);
  EXPECT_NE(end.find("\"id\":\"sub-1\""), std::string::npos) << end;
  EXPECT_NE(end.find("\"resultType\":\"complete\""), std::string::npos) << end;
  EXPECT_EQ(server_->Wait(20000), 0);
}

// Issue 36, point 15: a listen refused past the stream bound answered 503
// with id null; the id is kept, and the bound named.
TEST_F(StatelessHttpTest, AListenPastTheStreamBoundIsRefusedWithItsId) {
  Start({{"MCP_EXEC_MAX_STREAMS", "1"}});
  json first =
      Request("sub-a", "subscriptions/listen", {{"notifications", {{"toolsListChanged", true}}}});
  int fd = RawPost(first, HeadersFor(first));
  ASSERT_GE(fd, 0);
  ASSERT_NE(ReadUntil(fd, "acknowledged", 5000).find("acknowledged"), std::string::npos);
  json second =
      Request("sub-b", "subscriptions/listen", {{"notifications", {{"toolsListChanged", true}}}});
  ExpectRefused(Post(second), 503, -32603, "sub-b");
  auto r = Post(second);
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("MCP_EXEC_MAX_STREAMS=1"), std::string::npos) << r->body;
  close(fd);
}

// The 2025 era in the same process, and the token in both.
TEST_F(StatelessHttpTest, BothErasServeTheSameProcessAndTheTokenHoldsInBoth) {
  Start({{"MCP_EXEC_AUTH_TOKEN", "s3cret-token"}});
  std::string sid = Initialize();
  EXPECT_FALSE(sid.empty());
  auto r = Post(CallExec(5, "print('new era')"));
  ASSERT_TRUE(r);
  EXPECT_EQ(Message(r->body)["result"]["structuredContent"]["stdout"], "new era\n") << r->body;
  EXPECT_EQ(Message(r->body)["result"].value("resultType", ""), "complete") << r->body;
  json msg = Request(6, "server/discover");
  httplib::Client no_token("127.0.0.1", port_);
  auto refused = no_token.Post("/mcp", HeadersFor(msg), msg.dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  EXPECT_EQ(refused->body.rfind("unauthorized", 0), 0u) << refused->body;
  // What a client caches came with its credential.
  auto d = Post(msg);
  ASSERT_TRUE(d);
  EXPECT_EQ(Message(d->body)["result"]["cacheScope"], "private") << d->body;
  // A browser may send the revision's headers.
  httplib::Headers pre = {{"Origin", "http://localhost:3000"},
                          {"Access-Control-Request-Method", "POST"}};
  auto p = Client().Options("/mcp", pre);
  ASSERT_TRUE(p);
  EXPECT_NE(p->get_header_value("Access-Control-Allow-Headers").find("Mcp-Method, Mcp-Name"),
            std::string::npos)
      << p->get_header_value("Access-Control-Allow-Headers");
}

// Issue 21, point 6, over HTTP: a handle minted on one connection works
// from another client and from a 2025 session of the same server; its
// Mcp-Param-Session header is required and checked like the standard ones.
TEST_F(StatelessHttpTest, AHandleMintedOnOneConnectionWorksFromAnother) {
  Start();
  json first = CallExec(1, "z = 7\nprint('made')");
  first["params"]["arguments"]["session"] = "new";
  httplib::Headers h = HeadersFor(first);
  h.emplace("Mcp-Param-Session", "new");
  auto r = Post(first, h);
  ASSERT_TRUE(r);
  json made = Message(r->body)["result"]["structuredContent"];
  const std::string handle = made.value("session", "");
  ASSERT_FALSE(handle.empty()) << r->body;
  // The header missing, or another value: -32020.
  json again = CallExec(2, "print(z)");
  again["params"]["arguments"]["session"] = handle;
  ExpectRefused(Post(again), 400, -32020, 2);
  httplib::Headers wrong = HeadersFor(again);
  wrong.emplace("Mcp-Param-Session", "new");
  ExpectRefused(Post(again, wrong), 400, -32020, 2);
  // Another client (127.0.0.2), the header in its base64 form.
  httplib::Headers other = HeadersFor(again);
  other.emplace("Mcp-Param-Session", "=?base64?" + Base64Encode(handle) + "?=");
  int fd = ConnectRaw("127.0.0.2");
  ASSERT_GE(fd, 0);
  std::string body = again.dump();
  std::string http =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Connection: close\r\n";
  for (const auto& [k, v] : other) http += k + ": " + v + "\r\n";
  http += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_TRUE(SendAll(fd, http));
  std::string got = ReadUntil(fd, "\"resultType\"", 20000);
  close(fd);
  EXPECT_NE(got.find("\"stdout\":\"7\\n\""), std::string::npos) << got;
  // A 2025 session of the same server.
  std::string sid = Initialize();
  json legacy = {
      {"jsonrpc", "2.0"},
      {"id", 3},
      {"method", "tools/call"},
      {"params",
       {{"name", "exec"}, {"arguments", {{"code", "print(z * 6)"}, {"session", handle}}}}}};
  auto l = Client().Post("/mcp", Session(sid), legacy.dump(), "application/json");
  ASSERT_TRUE(l);
  EXPECT_EQ(Message(l->body)["result"]["structuredContent"]["stdout"], "42\n") << l->body;
}
}  // namespace
}  // namespace mcpexec::testing
