// MCP 2026-07-28 over stdio, against the built server: no handshake, the
// envelope in each request's _meta, results that are complete and name the
// server, cancellation by notifications/cancelled, beside the 2025 era on
// the same process.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "server_process.h"

namespace mcpexec::testing {
namespace {

using json = nlohmann::json;

json Request(const json& id, const std::string& method, json params = json::object()) {
  params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                     {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

TEST(StatelessStdioTest, DiscoverAndACallWithoutAHandshake) {
  ServerProcess s;
  s.SendRaw(Request(1, "server/discover").dump());
  json d = s.WaitForId(1, 60000);
  ASSERT_TRUE(d.contains("result")) << d.dump();
  EXPECT_EQ(d["result"]["supportedVersions"][0], "2026-07-28");
  EXPECT_EQ(d["result"]["resultType"], "complete");
  EXPECT_FALSE(d["result"].value("instructions", "").empty());
  s.SendRaw(
      Request(2, "tools/call", {{"name", "exec"}, {"arguments", {{"code", "print(6*7)"}}}}).dump());
  json r = s.WaitForId(2, 60000);
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["resultType"], "complete");
  EXPECT_EQ(r["result"]["structuredContent"]["stdout"], "42\n") << r.dump();
  EXPECT_EQ(r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-exec");
  // The 2025 era on the same process, after it.
  s.Initialize();
  EXPECT_EQ(s.Exec("print(1)")["stdout"], "1\n");
}

TEST(StatelessStdioTest, ACancelledCallEndsItsRunAndGetsNoAnswer) {
  ServerProcess s;
  s.SendRaw(Request(3, "tools/call",
                    {{"name", "exec"}, {"arguments", {{"code", "import time; time.sleep(60)"}}}})
                .dump());
  ASSERT_TRUE(WaitUntil([&] { return s.StderrHas("\"event\":\"zygote_ready\"", 0); }, 60000));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  s.SendRaw(json({{"jsonrpc", "2.0"},
                  {"method", "notifications/cancelled"},
                  {"params", {{"requestId", 3}, {"reason", "test"}}}})
                .dump());
  // The run ends (its log line says cancelled), and no answer comes for id 3.
  EXPECT_TRUE(s.StderrHas("\"reason\":\"cancelled\"", 10000)) << s.Stderr();
  s.SendRaw(Request(4, "tools/list").dump());
  json l = s.WaitForId(4, 10000);
  EXPECT_EQ(l["result"]["tools"][0]["name"], "exec");
  EXPECT_FALSE(s.Receive(300).has_value());
}

TEST(StatelessStdioTest, BadEnvelopeAndVersionGetTheirCodes) {
  ServerProcess s;
  json no_caps = Request("a", "tools/list");
  no_caps["params"]["_meta"].erase("io.modelcontextprotocol/clientCapabilities");
  s.SendRaw(no_caps.dump());
  EXPECT_EQ(s.WaitForId("a", 60000)["error"]["code"], -32602);
  json old = Request("b", "tools/list");
  old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2025-06-18";
  s.SendRaw(old.dump());
  json e = s.WaitForId("b", 10000)["error"];
  EXPECT_EQ(e["code"], -32022);
  EXPECT_EQ(e["data"]["requested"], "2025-06-18");
  s.SendRaw(Request("c", "ping").dump());
  EXPECT_EQ(s.WaitForId("c", 10000)["error"]["code"], -32601);
}

}  // namespace
}  // namespace mcpexec::testing
