#include "protocol/mcp_session.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "base/cancel.h"
#include "model/config.h"
#include "protocol/stateless.h"
#include "tool/contract.h"
#include "without_threads.h"

namespace mcpexec {
namespace {

using json = nlohmann::json;

// A backend that answers without running anything, so the protocol layer is
// tested alone (the arguments are checked by the real contract).
class FakeBackend : public ToolBackend {
 public:
  json ToolDescriptor() const override { return {{"name", "exec"}}; }
  std::string ToolName() const override { return "exec"; }
  std::variant<Work, json> Accept(const json& arguments, const CallContext& context) override {
    last_context = context;
    auto validated = ValidateExecArguments(arguments, config_);
    if (auto* err = std::get_if<std::string>(&validated)) return ToolError(*err);
    if (full) return ToolError("the server is at capacity");
    return Work([this, req = std::get<ExecRequest>(validated)](
                    CancelToken& cancel, const Progress&) { return Execute(req, cancel); });
  }
  virtual json Execute(const ExecRequest& req, CancelToken& cancel) {
    if (req.code == "block") {
      // Waits until cancelled.
      WaitCancelled(cancel);
    }
    ExecResult r;
    r.stdout_data = "ran:" + req.code;
    return ToolResult(r);
  }
  static void WaitCancelled(CancelToken& c) {
    while (!c.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Config config_;
  bool full = false;
  CallContext last_context;
};

class SessionTest : public ::testing::Test {
 protected:
  SessionTest()
      : session_(backend_, [this](const json& m) {
          std::lock_guard<std::mutex> lock(mu_);
          sent_.push_back(m);
          cv_.notify_all();
        }) {}

  json Last() {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_.empty() ? json() : sent_.back();
  }
  json WaitFor(const json& id) {
    std::unique_lock<std::mutex> lock(mu_);
    json found;
    cv_.wait_for(lock, std::chrono::seconds(5), [&] {
      for (auto& m : sent_) {
        if (m.contains("id") && m["id"] == id) {
          found = m;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  void Initialize(const std::string& version = "2025-06-18") {
    session_.Handle({{"jsonrpc", "2.0"},
                     {"id", 0},
                     {"method", "initialize"},
                     {"params", {{"protocolVersion", version}}}});
  }
  json Call(const json& id, const json& params) {
    session_.Handle({{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", params}});
    return WaitFor(id);
  }

  FakeBackend backend_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<json> sent_;
  McpSession session_;
};

TEST(ProtocolVersionTest, EchoesSupportedElseNewest) {
  for (const char* v : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    EXPECT_EQ(eras::NegotiateLegacyVersion(v), v);
  }
  EXPECT_EQ(eras::NegotiateLegacyVersion("1999-01-01"), "2025-11-25");
  EXPECT_EQ(eras::NegotiateLegacyVersion(""), "2025-11-25");
}

TEST_F(SessionTest, InitializeAnswersServerInfoAndVersion) {
  Initialize("2025-03-26");
  json r = Last();
  EXPECT_EQ(r["id"], 0);
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-03-26");
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "mcp-exec");
  EXPECT_TRUE(r["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(r["result"]["capabilities"]["resources"],
            json({{"listChanged", false}, {"subscribe", false}}));
}

TEST_F(SessionTest, MalformedJsonIsParseError) {
  session_.HandleText("{not json");
  EXPECT_EQ(Last()["error"]["code"], -32700);
  EXPECT_TRUE(Last()["id"].is_null());
}

TEST_F(SessionTest, InvalidRequests) {
  session_.Handle(json::array({1, 2}));
  EXPECT_EQ(Last()["error"]["code"], -32600);
  session_.Handle(42);
  EXPECT_EQ(Last()["error"]["code"], -32600);
  session_.Handle({{"jsonrpc", "1.0"}, {"id", 1}, {"method", "ping"}});
  EXPECT_EQ(Last()["error"]["code"], -32600);
  session_.Handle({{"jsonrpc", "2.0"}, {"id", 1}, {"method", 7}});
  EXPECT_EQ(Last()["error"]["code"], -32600);
  session_.Handle({{"jsonrpc", "2.0"}, {"id", {{"a", 1}}}, {"method", "ping"}});
  EXPECT_EQ(Last()["error"]["code"], -32600);
}

TEST_F(SessionTest, RequestsBeforeInitializeAreRejectedButPingWorks) {
  session_.Handle({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}});
  EXPECT_EQ(Last()["error"]["code"], -32600);
  session_.Handle({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}});
  EXPECT_EQ(Last()["result"], json::object());
}

TEST_F(SessionTest, UnknownMethodIsMethodNotFound) {
  Initialize();
  session_.Handle({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "prompts/list"}});
  EXPECT_EQ(Last()["error"]["code"], -32601);
}

// Resources are the links calls hand out: declared, none listed, and a URI
// that names nothing is -32002 (2025) with the URI in data.
TEST_F(SessionTest, ResourcesAreDeclaredAndAnUnknownUriIsNotFound) {
  Initialize();
  session_.Handle({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "resources/list"}});
  EXPECT_EQ(Last()["result"]["resources"], json::array());
  session_.Handle({{"jsonrpc", "2.0"},
                   {"id", 4},
                   {"method", "resources/read"},
                   {"params", {{"uri", "mcp-exec://resource/00/x"}}}});
  EXPECT_EQ(Last()["error"]["code"], -32002);
  EXPECT_EQ(Last()["error"]["data"]["uri"], "mcp-exec://resource/00/x");
  session_.Handle(
      {{"jsonrpc", "2.0"}, {"id", 5}, {"method", "resources/read"}, {"params", {{"uri", 5}}}});
  EXPECT_EQ(Last()["error"]["code"], -32602);
}

TEST_F(SessionTest, NotificationsGetNoAnswer) {
  Initialize();
  size_t before = sent_.size();
  session_.Handle({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  session_.Handle({{"jsonrpc", "2.0"}, {"method", "notifications/whatever"}});
  EXPECT_EQ(sent_.size(), before);
}

TEST_F(SessionTest, ToolsListHasTheTool) {
  Initialize();
  session_.Handle({{"jsonrpc", "2.0"}, {"id", "l"}, {"method", "tools/list"}});
  EXPECT_EQ(Last()["result"]["tools"][0]["name"], "exec");
}

TEST_F(SessionTest, UnknownToolIsInvalidParams) {
  Initialize();
  json r = Call(5, {{"name", "shell"}, {"arguments", {{"code", "x"}}}});
  EXPECT_EQ(r["error"]["code"], -32602);
}

// Issue 19, point 10: an 8 MiB progressToken, repeated in a notification
// every second to a client that did not read, grew the server by 320 MiB in
// 30 s. The token is bounded.
TEST_F(SessionTest, AProgressTokenPastItsBoundIsInvalidParams) {
  Initialize();
  json ok = Call(7, {{"name", "exec"},
                     {"arguments", {{"code", "x"}}},
                     {"_meta", {{"progressToken", std::string(kMaxProgressTokenBytes, 't')}}}});
  EXPECT_EQ(ok["result"]["structuredContent"]["stdout"], "ran:x") << ok.dump();
  json big = Call(8, {{"name", "exec"},
                      {"arguments", {{"code", "x"}}},
                      {"_meta", {{"progressToken", std::string(8 << 20, 't')}}}});
  EXPECT_EQ(big["error"]["code"], -32602);
  EXPECT_EQ(big["error"]["message"], "_meta.progressToken is 8388608 bytes long; at most " +
                                         std::to_string(kMaxProgressTokenBytes));
}

TEST_F(SessionTest, ValidationFailureIsAToolErrorNotAJsonRpcError) {
  Initialize();
  json r = Call(6, {{"name", "exec"}, {"arguments", {{"code", "  "}}}});
  EXPECT_FALSE(r.contains("error"));
  EXPECT_EQ(r["result"]["isError"], true);
  EXPECT_EQ(r["result"]["content"][0]["text"], "code must not be empty");
}

TEST_F(SessionTest, CallRunsOnTheBackend) {
  Initialize();
  json r = Call("c1", {{"name", "exec"}, {"arguments", {{"code", "x=1"}}}});
  EXPECT_EQ(r["result"]["structuredContent"]["stdout"], "ran:x=1");
}

TEST_F(SessionTest, AtCapacityIsAToolError) {
  Initialize();
  backend_.full = true;
  json r = Call(7, {{"name", "exec"}, {"arguments", {{"code", "x=1"}}}});
  EXPECT_EQ(r["result"]["isError"], true);
  EXPECT_NE(r["result"]["content"][0]["text"].get<std::string>().find("capacity"),
            std::string::npos);
}

TEST_F(SessionTest, CancelledCallGetsNoResponse) {
  Initialize();
  session_.Handle({{"jsonrpc", "2.0"},
                   {"id", 8},
                   {"method", "tools/call"},
                   {"params", {{"name", "exec"}, {"arguments", {{"code", "block"}}}}}});
  EXPECT_EQ(session_.in_flight(), 1);
  session_.Handle({{"jsonrpc", "2.0"},
                   {"method", "notifications/cancelled"},
                   {"params", {{"requestId", 8}, {"reason", "user"}}}});
  ASSERT_TRUE(session_.WaitIdle(std::chrono::seconds(5)));
  for (auto& m : sent_) EXPECT_NE(m.value("id", json()), json(8));
}

// The stdio drain's wait: the session's idle eventfd becomes readable when
// its last call in flight ends, and not before.
TEST_F(SessionTest, TheIdleFdIsReadableOnceTheLastCallEnds) {
  Initialize();
  const int idle = session_.IdleFd();
  ASSERT_GE(idle, 0);
  EXPECT_EQ(session_.IdleFd(), idle) << "one eventfd per session";
  session_.Handle({{"jsonrpc", "2.0"},
                   {"id", 8},
                   {"method", "tools/call"},
                   {"params", {{"name", "exec"}, {"arguments", {{"code", "block"}}}}}});
  pollfd p{idle, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 50), 0) << "readable with a call in flight";
  session_.Handle({{"jsonrpc", "2.0"},
                   {"method", "notifications/cancelled"},
                   {"params", {{"requestId", 8}, {"reason", "user"}}}});
  EXPECT_EQ(poll(&p, 1, 5000), 1) << "the call's end did not wake the idle fd";
  EXPECT_EQ(session_.in_flight(), 0);
}

// A client that (wrongly) reuses the id of a call still in flight: both calls
// stay reachable, so one cancellation of that id ends both (before, the
// second replaced the first, which then ran to its own end uncancellable).
TEST_F(SessionTest, ReusedIdInFlightCancelsEveryCallOfIt) {
  Initialize();
  json call = {{"jsonrpc", "2.0"},
               {"id", 9},
               {"method", "tools/call"},
               {"params", {{"name", "exec"}, {"arguments", {{"code", "block"}}}}}};
  session_.Handle(call);
  session_.Handle(call);
  EXPECT_EQ(session_.in_flight(), 2);
  session_.Handle({{"jsonrpc", "2.0"},
                   {"method", "notifications/cancelled"},
                   {"params", {{"requestId", 9}, {"reason", "user"}}}});
  EXPECT_TRUE(session_.WaitIdle(std::chrono::seconds(5)))
      << "a call of the reused id was not cancelled";
}

// A backend whose call ignores cancellation for longer than the 30 s the
// session's destructor used to wait: the call thread, which holds the
// session, must still never outlive it.
class SlowToStopBackend : public FakeBackend {
 public:
  json Execute(const ExecRequest& req, CancelToken& cancel) override {
    started = true;
    WaitCancelled(cancel);
    std::this_thread::sleep_for(std::chrono::seconds(31));
    finished = true;
    return FakeBackend::Execute(req, cancel);
  }
  std::atomic<bool> started{false}, finished{false};
};

// Protocol 2026-07-28 on the same session: no handshake, the envelope in
// every request's _meta, every result complete and naming the server.
json Envelope() {
  return {{stateless::kMetaProtocolVersion, stateless::kVersion},
          {stateless::kMetaClientCapabilities, json::object()}};
}

json StatelessRequest(const json& id, const std::string& method, json params = json::object()) {
  params["_meta"] = Envelope();
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

TEST_F(SessionTest, StatelessDiscoverNeedsNoHandshake) {
  session_.Handle(StatelessRequest(1, "server/discover"));
  json r = WaitFor(1)["result"];
  EXPECT_EQ(r["resultType"], "complete");
  EXPECT_EQ(r["supportedVersions"][0], stateless::kVersion);
  EXPECT_TRUE(r["capabilities"].contains("tools"));
  EXPECT_EQ(r["ttlMs"], kCacheTtlMs);
  EXPECT_EQ(r["cacheScope"], "public");
  EXPECT_EQ(r["_meta"][stateless::kMetaServerInfo]["name"], "mcp-exec");
  EXPECT_FALSE(session_.initialized()) << "the stateless era has no handshake";
  // The legacy era still needs one on the same session.
  session_.Handle({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}});
  EXPECT_EQ(WaitFor(2)["error"]["code"], jsonrpc::kInvalidRequest);
}

TEST_F(SessionTest, StatelessListsAndCallsAreComplete) {
  session_.Handle(StatelessRequest(1, "tools/list"));
  json tools = WaitFor(1)["result"];
  EXPECT_EQ(tools["tools"][0]["name"], "exec");
  EXPECT_EQ(tools["resultType"], "complete");
  EXPECT_EQ(tools["cacheScope"], "public");
  for (const char* m : {"prompts/list", "resources/list", "resources/templates/list"}) {
    session_.Handle(StatelessRequest(m, m));
    json r = WaitFor(m)["result"];
    EXPECT_EQ(r["resultType"], "complete") << m;
    EXPECT_EQ(r["ttlMs"], kCacheTtlMs) << m;
  }
  session_.Handle(
      StatelessRequest(3, "tools/call", {{"name", "exec"}, {"arguments", {{"code", "x"}}}}));
  json call = WaitFor(3)["result"];
  EXPECT_EQ(call["resultType"], "complete") << call.dump();
  EXPECT_EQ(call["structuredContent"]["stdout"], "ran:x") << call.dump();
  session_.Handle(StatelessRequest(4, "tools/call", {{"name", "exec"}, {"arguments", 5}}));
  json bad = WaitFor(4)["result"];
  EXPECT_EQ(bad["isError"], true);
  EXPECT_EQ(bad["resultType"], "complete");
}

TEST_F(SessionTest, StatelessFaultsGetTheirCodesWithTheRequestsId) {
  session_.Handle(
      {{"jsonrpc", "2.0"},
       {"id", "a"},
       {"method", "tools/list"},
       {"params", {{"_meta", {{stateless::kMetaProtocolVersion, stateless::kVersion}}}}}});
  EXPECT_EQ(WaitFor("a")["error"]["code"], jsonrpc::kInvalidParams);
  json old = StatelessRequest("b", "tools/list");
  old["params"]["_meta"][stateless::kMetaProtocolVersion] = "2025-11-25";
  session_.Handle(old);
  json e = WaitFor("b")["error"];
  EXPECT_EQ(e["code"], stateless::kUnsupportedProtocolVersion);
  EXPECT_EQ(e["data"]["requested"], "2025-11-25");
  for (const char* m : {"initialize", "ping", "logging/setLevel", "resources/subscribe"}) {
    session_.Handle(StatelessRequest(m, m));
    EXPECT_EQ(WaitFor(m)["error"]["code"], jsonrpc::kMethodNotFound) << m;
  }
  session_.Handle(StatelessRequest("c", "prompts/get", {{"name", "x"}}));
  EXPECT_EQ(WaitFor("c")["error"]["code"], jsonrpc::kInvalidParams);
}

TEST_F(SessionTest, AStatelessCallCancelledGetsNoAnswer) {
  session_.Handle(
      StatelessRequest(8, "tools/call", {{"name", "exec"}, {"arguments", {{"code", "block"}}}}));
  EXPECT_EQ(session_.in_flight(), 1);
  session_.Handle(
      {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 8}}}});
  ASSERT_TRUE(session_.WaitIdle(std::chrono::seconds(5)));
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& m : sent_) EXPECT_NE(m.value("id", json()), json(8));
}

TEST_F(SessionTest, TheBackendHearsWhereACallCameFrom) {
  session_.Handle(
      {{"jsonrpc", "2.0"},
       {"id", 0},
       {"method", "initialize"},
       {"params", {{"protocolVersion", "2025-06-18"}, {"clientInfo", {{"name", "old"}}}}}});
  Call(1, {{"name", "exec"}, {"arguments", {{"code", "x"}}}});
  EXPECT_EQ(backend_.last_context.connection, session_.connection());
  EXPECT_FALSE(backend_.last_context.stateless);
  EXPECT_EQ(backend_.last_context.client, "old");
  json request =
      StatelessRequest(2, "tools/call", {{"name", "exec"}, {"arguments", {{"code", "y"}}}});
  request["params"]["_meta"][stateless::kMetaClientInfo] = {{"name", "new"}, {"version", "2"}};
  session_.Handle(request);
  WaitFor(2);
  EXPECT_TRUE(backend_.last_context.stateless);
  EXPECT_EQ(backend_.last_context.client, "new");
}

TEST_F(SessionTest, AListenIsAcknowledgedFirstAndClosedAtTheEnd) {
  session_.Handle(StatelessRequest(5, "subscriptions/listen", {{"notifications", json::object()}}));
  json ack = Last();
  EXPECT_EQ(ack["method"], "notifications/subscriptions/acknowledged");
  EXPECT_EQ(ack["params"]["_meta"][stateless::kMetaSubscriptionId], 5);
  EXPECT_EQ(ack["params"]["notifications"], json::object());
  session_.Handle(StatelessRequest(6, "subscriptions/listen"));
  session_.Handle(
      {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 6}}}});
  session_.EndListens();
  json closed = WaitFor(5);
  EXPECT_EQ(closed["result"]["resultType"], "complete");
  EXPECT_EQ(closed["result"]["_meta"][stateless::kMetaSubscriptionId], 5);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& m : sent_) EXPECT_NE(m.value("id", json()), json(6)) << "a cancelled listen";
}

TEST(SessionLifetimeTest, NoCallThreadOutlivesItsSession) {
  SlowToStopBackend backend;
  std::atomic<int> sent{0};
  {
    McpSession session(backend, [&](const json&) { ++sent; });
    session.Handle({{"jsonrpc", "2.0"},
                    {"id", 0},
                    {"method", "initialize"},
                    {"params",
                     {{"protocolVersion", "2025-06-18"},
                      {"capabilities", json::object()},
                      {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}});
    session.Handle({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    session.Handle({{"jsonrpc", "2.0"},
                    {"id", 1},
                    {"method", "tools/call"},
                    {"params", {{"name", "exec"}, {"arguments", {{"code", "slow"}}}}}});
    for (int i = 0; i < 5000 && !backend.started; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(backend.started) << "the call never reached the backend";
  }  // the destructor cancels the call and must wait for its thread, however long
  EXPECT_TRUE(backend.finished) << "the session was destroyed while its call thread still ran";
}

// At the process limit (runs that keep the server's uid share it) no thread
// can be made for a call: the call is answered with a tool error that says
// so, the code never runs, and the session goes on.
TEST(SessionWithoutThreadsTest, ACallWithNoThreadToRunOnIsAnsweredAndTheSessionGoesOn) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to take an unprivileged uid in a child";
  const int status = testing::RunWithoutThreads([] {
    FakeBackend backend;
    std::vector<json> sent;  // answered on this thread: no other exists
    McpSession session(backend, [&](const json& m) { sent.push_back(m); });
    session.Handle({{"jsonrpc", "2.0"},
                    {"id", 0},
                    {"method", "initialize"},
                    {"params", {{"protocolVersion", "2025-06-18"}}}});
    session.Handle({{"jsonrpc", "2.0"},
                    {"id", 1},
                    {"method", "tools/call"},
                    {"params", {{"name", "exec"}, {"arguments", {{"code", "print(1)"}}}}}});
    if (sent.size() != 2) return 12;
    const json& answer = sent[1];
    if (answer.value("id", json()) != 1 || !answer.contains("result")) return 13;
    const json& result = answer["result"];
    if (!result.value("isError", false)) return 14;
    const std::string text = result["content"][0].value("text", "");
    if (text.find("could not start a thread") == std::string::npos) return 15;
    if (session.in_flight() != 0) return 16;
    session.Handle({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}});
    if (sent.size() != 3 || sent[2].value("id", json()) != 2) return 17;
    return 0;
  });
  EXPECT_EQ(status, 0)
      << "1 no uid or limit, 12 not answered at once, 13 no result, 14 not an error, 15 the "
         "error does not say why, 16 still counted, 17 the session stopped answering";
}

}  // namespace
}  // namespace mcpexec
