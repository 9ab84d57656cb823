// The vocabulary of MCP 2026-07-28 (protocol/stateless.h, protocol/eras.h):
// which era a message is of, the envelope and version checks with their exact codes and
// the request's own id, the methods served, and what every result carries.
#include "protocol/stateless.h"

#include <gtest/gtest.h>

#include <string>

#include "protocol/mcp_session.h"

namespace mcpexec::stateless {
namespace {

using json = nlohmann::json;

json Envelope() {
  return {{kMetaProtocolVersion, kVersion}, {kMetaClientCapabilities, json::object()}};
}

json Request(const std::string& method, const json& meta) {
  return {{"jsonrpc", "2.0"}, {"id", 7}, {"method", method}, {"params", {{"_meta", meta}}}};
}

TEST(StatelessClassify, TheEnvelopeOrARecentHeaderMakesAMessageStateless) {
  EXPECT_EQ(eras::Classify(Request("tools/list", Envelope()), nullptr), Era::kStateless);
  // The key alone decides, even with a wrong value (CheckEnvelope says so).
  EXPECT_EQ(eras::Classify(Request("tools/list", {{kMetaProtocolVersion, 7}}), nullptr),
            Era::kStateless);
  const json initialize = {{"jsonrpc", "2.0"},
                           {"id", 1},
                           {"method", "initialize"},
                           {"params", {{"protocolVersion", "2025-11-25"}}}};
  EXPECT_EQ(eras::Classify(initialize, nullptr), Era::kLegacy);
  EXPECT_EQ(eras::Classify(Request("ping", json::object()), nullptr), Era::kLegacy);
  const std::string recent = "2026-07-28", later = "2027-01-01", old = "2025-11-25";
  EXPECT_EQ(eras::Classify(initialize, &recent), Era::kStateless);
  EXPECT_EQ(eras::Classify(initialize, &later), Era::kStateless);
  EXPECT_EQ(eras::Classify(initialize, &old), Era::kLegacy);
  EXPECT_EQ(eras::Classify(json::array(), nullptr), Era::kLegacy);
}

TEST(StatelessEnvelope, AWholeEnvelopePasses) {
  json meta = Envelope();
  meta[kMetaClientInfo] = {{"name", "c"}, {"version", "1"}};
  meta[kMetaLogLevel] = "warning";
  meta["progressToken"] = "p";
  EXPECT_FALSE(CheckEnvelope(7, {{"_meta", meta}}));
}

struct BadEnvelope {
  const char* what;
  json params;
  const char* missing;  // the key listed under data.missing, or ""
  const char* invalid;  // under data.invalid, or ""
};

TEST(StatelessEnvelope, EachFaultIsInvalidParamsWithTheRequestsIdAndTheKeyNamed) {
  auto without = [](const char* key) {
    json m = Envelope();
    m.erase(key);
    return json{{"_meta", m}};
  };
  auto with = [](const char* key, const json& v) {
    json m = Envelope();
    m[key] = v;
    return json{{"_meta", m}};
  };
  const BadEnvelope cases[] = {
      {"no protocolVersion", without(kMetaProtocolVersion), kMetaProtocolVersion, ""},
      {"protocolVersion a number", with(kMetaProtocolVersion, 7), "", kMetaProtocolVersion},
      {"no clientCapabilities", without(kMetaClientCapabilities), kMetaClientCapabilities, ""},
      {"capabilities an array", with(kMetaClientCapabilities, json::array()), "",
       kMetaClientCapabilities},
      {"clientInfo without version", with(kMetaClientInfo, {{"name", "c"}}), "", kMetaClientInfo},
      {"logLevel unknown", with(kMetaLogLevel, "loud"), "", kMetaLogLevel},
  };
  for (const BadEnvelope& c : cases) {
    auto r = CheckEnvelope("req-1", c.params);
    ASSERT_TRUE(r) << c.what;
    EXPECT_EQ(r->http_status, 400) << c.what;
    EXPECT_EQ(r->response["id"], "req-1") << c.what;
    EXPECT_EQ(r->response["error"]["code"], jsonrpc::kInvalidParams) << c.what;
    const json data = r->response["error"]["data"];
    if (*c.missing) {
      EXPECT_EQ(data["missing"], json::array({c.missing})) << c.what;
    }
    if (*c.invalid) {
      EXPECT_EQ(data["invalid"], json::array({c.invalid})) << c.what;
    }
    const std::string message = r->response["error"]["message"];
    EXPECT_NE(message.find(*c.missing ? c.missing : c.invalid), std::string::npos) << message;
  }
  for (const json& params : {json::object(), json{{"_meta", "x"}}, json{{"_meta", nullptr}}}) {
    auto r = CheckEnvelope(3, params);
    ASSERT_TRUE(r) << params.dump();
    EXPECT_EQ(r->response["id"], 3);
    EXPECT_EQ(r->response["error"]["code"], jsonrpc::kInvalidParams);
  }
}

TEST(StatelessVersion, OnlyThisRevisionIsServedWithoutAHandshake) {
  EXPECT_FALSE(CheckVersion(1, kVersion));
  for (const std::string v : {"2025-11-25", "2026-12-01", "v999.0.0", ""}) {
    auto r = CheckVersion(9, v);
    ASSERT_TRUE(r) << v;
    EXPECT_EQ(r->http_status, 400);
    EXPECT_EQ(r->response["id"], 9);
    EXPECT_EQ(r->response["error"]["code"], kUnsupportedProtocolVersion);
    EXPECT_EQ(r->response["error"]["data"]["requested"], v);
    EXPECT_EQ(r->response["error"]["data"]["supported"], json(eras::AllSupportedVersions()));
  }
  const std::string legacy = CheckVersion(9, "2025-06-18")->response["error"]["message"];
  EXPECT_NE(legacy.find("after initialize"), std::string::npos) << legacy;
  const std::string unknown = CheckVersion(9, "2030-01-01")->response["error"]["message"];
  EXPECT_EQ(unknown.find("after initialize"), std::string::npos) << unknown;
}

TEST(StatelessVersion, TheSupportedListIsThisRevisionThenThe2025Ones) {
  const std::vector<std::string> all = eras::AllSupportedVersions();
  ASSERT_EQ(all.size(), eras::kLegacyVersions.size() + 1);
  EXPECT_EQ(all.front(), kVersion);
  // initialize never answers with the stateless revision.
  EXPECT_EQ(eras::NegotiateLegacyVersion(kVersion), eras::kLegacyVersions.front());
}

TEST(StatelessMethods, TheRemovedMethodsAreNotServed) {
  for (const char* m : {"server/discover", "tools/list", "tools/call", "subscriptions/listen",
                        "prompts/list", "resources/list", "resources/templates/list"}) {
    EXPECT_TRUE(eras::IsStatelessMethod(m)) << m;
  }
  for (const char* m : {"initialize", "ping", "logging/setLevel", "resources/subscribe",
                        "resources/unsubscribe", "notifications/initialized", "unknown/method"}) {
    EXPECT_FALSE(eras::IsStatelessMethod(m)) << m;
  }
}

TEST(StatelessResults, EveryResultIsCompleteAndNamesTheServer) {
  json r = Complete({{"tools", json::array()}, {"_meta", {{"x", 1}}}});
  EXPECT_EQ(r["resultType"], "complete");
  EXPECT_EQ(r["tools"], json::array());
  EXPECT_EQ(r["_meta"]["x"], 1);
  EXPECT_EQ(r["_meta"][kMetaServerInfo]["name"], "mcp-exec");
  EXPECT_TRUE(r["_meta"][kMetaServerInfo]["version"].is_string());
  json hinted = WithCacheHints(json::object(), 300000, "public");
  EXPECT_EQ(hinted["ttlMs"], 300000);
  EXPECT_EQ(hinted["cacheScope"], "public");
}

}  // namespace
}  // namespace mcpexec::stateless
