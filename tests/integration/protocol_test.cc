// JSON-RPC and MCP behaviour of the stdio transport, against the real binary.
#include <gtest/gtest.h>

#include "server_process.h"

namespace mcpexec::testing {
namespace {

TEST(StdioProtocolTest, MalformedJsonIsParseErrorAndTheServerKeepsServing) {
  ServerProcess s;
  s.Initialize();
  s.SendRaw("{this is not json");
  auto m = s.Receive(30000);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["error"]["code"], -32700);
  EXPECT_EQ(s.Request("ping", json::object())["result"], json::object());
}

TEST(StdioProtocolTest, OversizedLineIsRejectedAndTheServerKeepsServing) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_REQUEST_BYTES", "4096"}});
  s.Initialize();
  s.SendRaw(R"({"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":")" +
            std::string(200000, 'x') + "\"}}");
  auto m = s.Receive(30000);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["error"]["code"], -32600);
  EXPECT_NE((*m)["error"]["message"].get<std::string>().find("4096"), std::string::npos);
  EXPECT_EQ(s.Request("ping", json::object())["result"], json::object());
}

TEST(StdioProtocolTest, InvalidRequestAndUnknownMethod) {
  ServerProcess s;
  s.Initialize();
  s.SendRaw(R"({"jsonrpc":"2.0","id":1})");
  EXPECT_EQ((*s.Receive(30000))["error"]["code"], -32600);
  s.SendRaw(R"(["batch"])");
  EXPECT_EQ((*s.Receive(30000))["error"]["code"], -32600);
  EXPECT_EQ(s.Request("no/such/method", json::object())["error"]["code"], -32601);
}

TEST(StdioProtocolTest, RequestsBeforeInitializeAreRejected) {
  ServerProcess s;
  json r = s.Request("tools/list", json::object());
  EXPECT_EQ(r["error"]["code"], -32600);
  r = s.Request("tools/call", {{"name", "exec"}, {"arguments", {{"code", "print(1)"}}}});
  EXPECT_EQ(r["error"]["code"], -32600);
}

TEST(StdioProtocolTest, VersionNegotiation) {
  for (const char* v : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    ServerProcess s;
    EXPECT_EQ(s.Initialize(v)["result"]["protocolVersion"], v);
  }
  ServerProcess s;
  EXPECT_EQ(s.Initialize("2030-01-01")["result"]["protocolVersion"], "2025-11-25");
}

TEST(StdioProtocolTest, UnknownToolIsJsonRpcInvalidParams) {
  ServerProcess s;
  s.Initialize();
  json r = s.Request("tools/call", {{"name", "bash"}, {"arguments", {{"code", "ls"}}}});
  EXPECT_EQ(r["error"]["code"], -32602);
}

TEST(StdioProtocolTest, ToolsListStatesSchemaLiveLimitsAndPackages) {
  ServerProcess s(Env{{"MCP_EXEC_DEFAULT_TIMEOUT_S", "17"},
                      {"MCP_EXEC_MAX_TIMEOUT_S", "77"},
                      {"MCP_EXEC_MAX_OUTPUT_BYTES", "4321"},
                      {"MCP_EXEC_MAX_STDIN_BYTES", "1234"}});
  s.Initialize();
  json tools = s.Request("tools/list", json::object())["result"]["tools"];
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0]["name"], "exec");
  EXPECT_EQ(tools[0]["inputSchema"]["required"], json::array({"code"}));
  EXPECT_EQ(tools[0]["inputSchema"]["additionalProperties"], false);
  EXPECT_TRUE(tools[0].contains("outputSchema"));
  std::string d = tools[0]["description"];
  for (const char* s : {"17 s", "77 s", "4321 bytes", "1234 bytes", "numpy", "pandas", "PyYAML",
                        "Jinja2", "Pillow", "matplotlib"}) {
    EXPECT_NE(d.find(s), std::string::npos) << s;
  }
}

// Issue 20, point 3: the instructions said "Every call starts fresh", which
// sessions made untrue. They now say what a call keeps in the tool
// description's own sentences.
TEST(StdioProtocolTest, InstructionsSayWhatACallKeepsAsTheDescriptionDoes) {
  ServerProcess s;
  json init = s.Initialize();
  ASSERT_TRUE(init["result"].contains("instructions")) << init.dump();
  std::string text = init["result"]["instructions"];
  EXPECT_EQ(text.find("Every call starts fresh"), std::string::npos) << text;
  json tools = s.Request("tools/list", json::object())["result"]["tools"];
  std::string d = tools[0]["description"];
  for (const char* sentence :
       {"Without session, each call is a fresh process started from a pre-warmed interpreter; "
        "nothing persists between calls.",
        "Pass session: \"new\" to start a live interpreter, then its handle (the result's "
        "session) to keep using it: variables, imports and files persist"}) {
    EXPECT_NE(text.find(sentence), std::string::npos) << text;
    EXPECT_NE(d.find(sentence), std::string::npos) << d;
  }
}

TEST(StdioProtocolTest, StdoutCarriesProtocolMessagesOnly) {
  ServerProcess s;
  s.Initialize();
  // Output of the code, warnings and logs must never leak onto stdout.
  json r = s.Exec("import sys, os\nprint('to stdout')\nos.write(2, b'raw stderr')\n");
  EXPECT_EQ(r["stdout"], "to stdout\n");
  s.Request("ping", json::object());  // Receive() throws on any non-JSON line
  EXPECT_TRUE(s.StderrHas("\"event\":\"run\"")) << s.Stderr();
}

}  // namespace
}  // namespace mcpexec::testing
