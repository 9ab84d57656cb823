// MCP 2026-07-28 over stdio, against the built server: no handshake, the
// envelope in each request's _meta, results that are complete and name the
// server, cancellation by notifications/cancelled, beside the 2025 era on
// the same process.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
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

// A stateless exec call's structuredContent, or its tool error's text.
json CallIn(ServerProcess& s, const json& id, const json& arguments) {
  s.SendRaw(Request(id, "tools/call", {{"name", "exec"}, {"arguments", arguments}}).dump());
  json r = s.WaitForId(id, 60000);
  if (!r.contains("result")) return r;
  if (r["result"].value("isError", false))
    return {{"error_text", r["result"]["content"][0]["text"]}};
  return r["result"]["structuredContent"];
}

// Sessions by handle (issue 21, point 6): "new" mints one, later calls pass
// it back (from either era on the process), reset restarts it in place, a
// guessed or a caller-chosen name is refused in this era, saying how to
// start one.
TEST(StatelessStdioTest, ASessionIsAHandleTheServerMints) {
  ServerProcess s;
  json first = CallIn(s, 1, {{"code", "x = 41\nprint('set')"}, {"session", "new"}});
  ASSERT_TRUE(first.contains("session")) << first.dump();
  const std::string handle = first["session"];
  EXPECT_TRUE(std::regex_match(handle, std::regex("^py-[A-Za-z0-9_-]{24}$"))) << handle;
  EXPECT_EQ(first["session_new"], true);
  json second = CallIn(s, 2, {{"code", "print(x + 1)"}, {"session", handle}});
  EXPECT_EQ(second["stdout"], "42\n") << second.dump();
  EXPECT_EQ(second["session"], handle);
  EXPECT_EQ(second["session_new"], false);
  // Another "new" is another interpreter.
  json other = CallIn(s, 3, {{"code", "print('x' in globals())"}, {"session", "new"}});
  EXPECT_EQ(other["stdout"], "False\n") << other.dump();
  EXPECT_NE(other["session"], handle);
  // The 2025 era on the same process reaches it by its handle.
  s.Initialize();
  json legacy = s.Exec("print(x)", {{"session", handle}});
  EXPECT_EQ(legacy["stdout"], "41\n") << legacy.dump();
  // reset: the same handle, a fresh interpreter.
  json reset =
      CallIn(s, 4, {{"code", "print('x' in globals())"}, {"session", handle}, {"reset", true}});
  EXPECT_EQ(reset["stdout"], "False\n") << reset.dump();
  EXPECT_EQ(reset["session"], handle);
  EXPECT_EQ(reset["session_new"], true);
  // A guessed handle, and a name in this era: tool errors saying what to do.
  std::string guess = handle;
  guess[5] = guess[5] == 'A' ? 'B' : 'A';
  json guessed = CallIn(s, 5, {{"code", "print(x)"}, {"session", guess}});
  EXPECT_NE(guessed.value("error_text", "").find("is not a live session of this server"),
            std::string::npos)
      << guessed.dump();
  EXPECT_NE(guessed.value("error_text", "").find("session: \"new\""), std::string::npos);
  json named = CallIn(s, 6, {{"code", "print(1)"}, {"session", "nb"}});
  EXPECT_NE(named.value("error_text", "").find("\"nb\" is not a session handle"), std::string::npos)
      << named.dump();
  // The handle is a bearer capability: never in the log.
  EXPECT_EQ(s.Stderr().find(handle), std::string::npos);
}

// A handle ends with its session's idle limit, and then says why.
TEST(StatelessStdioTest, AHandleEndsWithItsSessionsIdleLimit) {
  ServerProcess s(Env{{"MCP_EXEC_PY_SESSION_IDLE_S", "2"}});
  json first = CallIn(s, 1, {{"code", "y = 1"}, {"session", "new"}});
  const std::string handle = first.value("session", "");
  ASSERT_FALSE(handle.empty()) << first.dump();
  std::this_thread::sleep_for(std::chrono::seconds(4));
  json late = CallIn(s, 2, {{"code", "print(y)"}, {"session", handle}});
  EXPECT_NE(late.value("error_text", "")
                .find("has ended (no call for 2 s "
                      "(MCP_EXEC_PY_SESSION_IDLE_S))"),
            std::string::npos)
      << late.dump();
}

// And with its longest life, however busy it is.
TEST(StatelessStdioTest, AHandleEndsWithItsSessionsLongestLife) {
  ServerProcess s(Env{{"MCP_EXEC_PY_SESSION_MAX_S", "10"}});
  json first = CallIn(s, 1, {{"code", "y = 1"}, {"session", "new"}});
  const std::string handle = first.value("session", "");
  ASSERT_FALSE(handle.empty()) << first.dump();
  json busy;
  for (int i = 0; i < 6; ++i) {  // a call every 2 s: never idle
    std::this_thread::sleep_for(std::chrono::seconds(2));
    busy = CallIn(s, 10 + i, {{"code", "print(y)"}, {"session", handle}});
    if (busy.contains("error_text") || busy.contains("session_ended")) break;
  }
  // Its last call ended it, saying so; later calls are refused, saying why.
  json late = CallIn(s, 2, {{"code", "print(y)"}, {"session", handle}});
  EXPECT_NE(late.value("error_text", "")
                .find("has ended (it reached its longest life, 10 s "
                      "(MCP_EXEC_PY_SESSION_MAX_S))"),
            std::string::npos)
      << busy.dump() << "\n"
      << late.dump();
}

}  // namespace
}  // namespace mcpexec::testing
