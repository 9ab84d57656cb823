// The one dispatch (issue: one protocol core): a message's JSON-RPC
// envelope is checked once (jsonrpc::Classify), its id is typed
// (jsonrpc::RequestId), and each era routes methods by its own table, the
// stateless one holding exactly the era's method list (protocol/eras.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "protocol/eras.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_session.h"

namespace mcpexec {
namespace {

using json = nlohmann::json;
using jsonrpc::Inbound;
using jsonrpc::RequestId;

TEST(RequestIdTest, StringsAndIntegersOnlyEachKeepingItsType) {
  for (const json& bad : {json(nullptr), json(1.5), json(true), json::array(), json::object()}) {
    EXPECT_FALSE(RequestId::From(bad)) << bad.dump();
  }
  ASSERT_TRUE(RequestId::From(5));
  ASSERT_TRUE(RequestId::From("5"));
  EXPECT_NE(*RequestId::From(5), *RequestId::From("5"));
  EXPECT_EQ(RequestId::From(5)->ToJson(), json(5));
  EXPECT_EQ(RequestId::From("5")->ToJson(), json("5"));
  EXPECT_EQ(RequestId::From(-7)->ToJson(), json(-7));
  // JSON parses small positive integers as unsigned: the same id as signed.
  EXPECT_EQ(*RequestId::From(json::parse("42")), *RequestId::From(int64_t{42}));
  // Past INT64_MAX the id still echoes exactly.
  const uint64_t big = std::numeric_limits<uint64_t>::max();
  ASSERT_TRUE(RequestId::From(big));
  EXPECT_EQ(RequestId::From(big)->ToJson().dump(), "18446744073709551615");
  EXPECT_NE(*RequestId::From(big), *RequestId::From(-1));
}

TEST(RequestIdTest, IdsKeyAMapByValue) {
  std::map<RequestId, int> calls;
  calls[*RequestId::From(1)] = 1;
  calls[*RequestId::From("1")] = 2;
  calls[*RequestId::From(json::parse("1"))] = 3;  // the integer 1 again
  EXPECT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[*RequestId::From(1)], 3);
}

json Msg(const json& fields) {
  json m = {{"jsonrpc", "2.0"}};
  m.update(fields);
  return m;
}

TEST(ClassifyTest, RequestsNotificationsAndResponses) {
  Inbound r = jsonrpc::Classify(Msg({{"id", 3}, {"method", "tools/list"}}));
  EXPECT_EQ(r.kind, Inbound::Kind::kRequest);
  EXPECT_EQ(r.id->ToJson(), 3);
  EXPECT_EQ(r.method, "tools/list");
  EXPECT_EQ(r.params, json::object());  // absent params: {}
  r = jsonrpc::Classify(Msg({{"id", "a"}, {"method", "x"}, {"params", nullptr}}));
  EXPECT_EQ(r.kind, Inbound::Kind::kRequest);
  EXPECT_EQ(r.params, json::object());
  r = jsonrpc::Classify(Msg({{"method", "notifications/initialized"}, {"params", {{"a", 1}}}}));
  EXPECT_EQ(r.kind, Inbound::Kind::kNotification);
  EXPECT_FALSE(r.id);
  EXPECT_EQ(r.params, json({{"a", 1}}));
  EXPECT_EQ(jsonrpc::Classify(Msg({{"id", 1}, {"result", json::object()}})).kind,
            Inbound::Kind::kResponse);
  EXPECT_EQ(jsonrpc::Classify(Msg({{"id", 1}, {"error", {{"code", 1}}}})).kind,
            Inbound::Kind::kResponse);
  // A notification whose params are not an object is dropped, unanswered.
  EXPECT_EQ(jsonrpc::Classify(Msg({{"method", "x"}, {"params", 7}})).kind, Inbound::Kind::kDropped);
}

TEST(ClassifyTest, RefusalsCarryTheirCodeAndTheIdOnlyWhenItIsValid) {
  struct Case {
    json msg;
    int code;
    json id;
    const char* says;
  };
  const std::vector<Case> cases = {
      {json::array({1}), jsonrpc::kInvalidRequest, nullptr, "batch"},
      {json(42), jsonrpc::kInvalidRequest, nullptr, "JSON object"},
      {{{"jsonrpc", "1.0"}, {"id", 4}, {"method", "ping"}}, jsonrpc::kInvalidRequest, 4, "2.0"},
      {{{"id", 4}, {"method", "ping"}}, jsonrpc::kInvalidRequest, 4, "2.0"},
      {Msg({{"id", 5}}), jsonrpc::kInvalidRequest, 5, "method is missing"},
      {Msg({{"id", 6}, {"method", 7}}), jsonrpc::kInvalidRequest, 6, "method must be a string"},
      {Msg({{"id", {{"a", 1}}}, {"method", "ping"}}), jsonrpc::kInvalidRequest, nullptr,
       "id must be"},
      {Msg({{"id", 1.5}, {"method", "ping"}}), jsonrpc::kInvalidRequest, nullptr, "id must be"},
      {Msg({{"id", 8}, {"method", "ping"}, {"params", json::array()}}), jsonrpc::kInvalidParams, 8,
       "params must be an object"},
  };
  for (const Case& c : cases) {
    Inbound r = jsonrpc::Classify(c.msg);
    ASSERT_EQ(r.kind, Inbound::Kind::kRefused) << c.msg.dump();
    EXPECT_EQ(r.refusal["error"]["code"], c.code) << c.msg.dump();
    EXPECT_EQ(r.refusal["id"], c.id) << c.msg.dump();
    EXPECT_NE(r.refusal["error"]["message"].get<std::string>().find(c.says), std::string::npos)
        << r.refusal.dump();
  }
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(DispatchTableTest, TheStatelessTableIsTheErasMethodList) {
  std::vector<std::string> listed(eras::kStatelessMethods.begin(), eras::kStatelessMethods.end());
  EXPECT_EQ(Sorted(McpSession::MethodsOf(Era::kStateless)), Sorted(listed));
}

TEST(DispatchTableTest, TheLegacyTableHasTheHandshakeAndNoStatelessOnlyMethod) {
  const std::vector<std::string> legacy = McpSession::MethodsOf(Era::kLegacy);
  auto has = [&](const std::string& m) {
    return std::find(legacy.begin(), legacy.end(), m) != legacy.end();
  };
  for (const char* m : {"initialize", "ping", "tools/list", "tools/call", "resources/list",
                        "resources/templates/list", "resources/read", "tasks/get", "tasks/cancel",
                        "tasks/update"}) {
    EXPECT_TRUE(has(m)) << m;
  }
  for (const char* m : {"server/discover", "subscriptions/listen", "prompts/list"}) {
    EXPECT_FALSE(has(m)) << m;
  }
  EXPECT_EQ(legacy.size(), 10u);
}

TEST(ErasTest, VersionsAreListedOnce) {
  EXPECT_EQ(eras::AllSupportedVersions().front(), eras::kStatelessVersion);
  EXPECT_EQ(eras::AllSupportedVersions().size(), eras::kLegacyVersions.size() + 1);
  EXPECT_EQ(eras::LegacyVersionList(), "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05");
  EXPECT_TRUE(eras::IsLegacyVersion("2024-11-05"));
  EXPECT_FALSE(eras::IsLegacyVersion(eras::kStatelessVersion));
}

// One reading of a call's progress token, for the session (whether it
// sends progress) and the HTTP transport (whether it streams).
TEST(ProgressTokenTest, OnlyAStringOrAnIntegerAsksForProgress) {
  EXPECT_EQ(ProgressTokenOf({{"_meta", {{"progressToken", "t"}}}}), json("t"));
  EXPECT_EQ(ProgressTokenOf({{"_meta", {{"progressToken", 7}}}}), json(7));
  for (const json& params :
       {json::object(), json({{"_meta", 1}}), json({{"_meta", json::object()}}),
        json({{"_meta", {{"progressToken", 1.5}}}}),
        json({{"_meta", {{"progressToken", nullptr}}}}),
        json({{"_meta", {{"progressToken", json::object()}}}})}) {
    EXPECT_FALSE(ProgressTokenOf(params)) << params.dump();
  }
}

// The session serves a message the transport classified without checking
// it again, and a transport's cancel is a direct call on the call's token.
class DeliverTest : public ::testing::Test {
 protected:
  class Backend : public ToolBackend {
   public:
    json ToolDescriptor() const override { return {{"name", "exec"}}; }
    std::string ToolName() const override { return "exec"; }
    std::variant<Work, json> Accept(const json&, const CallContext&) override {
      return Work([](CancelToken& cancel, const Progress&) {
        while (!cancel.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return json({{"content", json::array()}});
      });
    }
  };
  DeliverTest()
      : session_(backend_, [this](const json& m) {
          std::lock_guard<std::mutex> lock(mu_);
          sent_.push_back(m);
        }) {}
  std::vector<json> Sent() {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }
  Backend backend_;
  std::mutex mu_;
  std::vector<json> sent_;
  McpSession session_;
};

TEST_F(DeliverTest, AClassifiedStatelessRequestIsServedAsTheTransportHandsIt) {
  // No _meta envelope: Handle would refuse it (-32602); Deliver trusts the
  // transport that checked it.
  session_.Deliver(jsonrpc::Classify(Msg({{"id", 1}, {"method", "tools/list"}})), Era::kStateless);
  ASSERT_EQ(Sent().size(), 1u);
  EXPECT_EQ(Sent()[0]["result"]["resultType"], "complete");
  session_.Handle(
      Msg({{"id", 2},
           {"method", "tools/list"},
           {"params", {{"_meta", {{eras::kMetaProtocolVersion, eras::kStatelessVersion}}}}}}));
  ASSERT_EQ(Sent().size(), 2u);
  EXPECT_EQ(Sent()[1]["error"]["code"], jsonrpc::kInvalidParams);  // no clientCapabilities
}

TEST_F(DeliverTest, CancelEndsTheCallWithoutAnAnswer) {
  session_.Deliver(
      jsonrpc::Classify(Msg({{"id", "c"},
                             {"method", "tools/call"},
                             {"params", {{"name", "exec"}, {"arguments", json::object()}}}})),
      Era::kStateless);
  ASSERT_EQ(session_.in_flight(), 1);
  session_.Cancel(*RequestId::From("other"));
  EXPECT_EQ(session_.in_flight(), 1);
  session_.Cancel(*RequestId::From("c"));
  EXPECT_TRUE(session_.WaitIdle(std::chrono::seconds(10)));
  EXPECT_TRUE(Sent().empty());
}

}  // namespace
}  // namespace mcpexec
