// The headers a request of MCP 2026-07-28 mirrors from its body
// (transport/mcp_headers.h), with the spec's own encoding examples.
#include "transport/mcp_headers.h"

#include <gtest/gtest.h>

#include <string>

namespace mcpexec::mcp_headers {
namespace {

using json = nlohmann::json;

json Call(const std::string& name) {
  return {{"jsonrpc", "2.0"},
          {"id", 1},
          {"method", "tools/call"},
          {"params",
           {{"name", name},
            {"arguments", json::object()},
            {"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}}}};
}

HeaderList Standard(const std::string& name) {
  return {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}, {"Mcp-Name", name}};
}

TEST(McpHeadersEncoding, TheSpecsExamplesDecode) {
  EXPECT_EQ(DecodeValue("us-west1"), "us-west1");
  EXPECT_EQ(DecodeValue("=?base64?SGVsbG8sIOS4lueVjA==?="), "Hello, \xe4\xb8\x96\xe7\x95\x8c");
  EXPECT_EQ(DecodeValue("=?base64?IHBhZGRlZCA=?="), " padded ");
  EXPECT_EQ(DecodeValue("=?base64?bGluZTEKbGluZTI=?="), "line1\nline2");
  EXPECT_EQ(DecodeValue("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="), "=?base64?literal?=");
}

TEST(McpHeadersEncoding, MalformedValuesAreRefusedAndHalfMarkersAreLiteral) {
  EXPECT_EQ(DecodeValue("  spaced\t"), "spaced");
  EXPECT_FALSE(DecodeValue("=?base64?SGVs!!!bG8=?="));
  EXPECT_FALSE(DecodeValue("=?base64?SGVsbG8?="));  // unpadded
  EXPECT_FALSE(DecodeValue("=?base64?/w==?="));     // not UTF-8
  EXPECT_FALSE(DecodeValue("a\x01z"));
  EXPECT_FALSE(DecodeValue("caf\xc3\xa9"));  // raw non-ASCII
  EXPECT_EQ(DecodeValue("=?base64?abc"), "=?base64?abc");
  EXPECT_EQ(DecodeValue("abc?="), "abc?=");
  EXPECT_EQ(DecodeValue("=?BASE64?SGk=?="), "=?BASE64?SGk=?=");
}

TEST(McpHeadersStandard, EachHeaderPresentOnceAndEqualToTheBody) {
  EXPECT_FALSE(CheckStandardHeaders(Standard("exec"), Call("exec")));
  HeaderList lower = {{"mcp-protocol-version", " 2026-07-28 "},
                      {"MCP-METHOD", "tools/call"},
                      {"mcp-name", "=?base64?ZXhlYw==?="}};
  EXPECT_FALSE(CheckStandardHeaders(lower, Call("exec")));
  struct Case {
    const char* what;
    HeaderList headers;
  };
  const Case cases[] = {
      {"no version", {{"Mcp-Method", "tools/call"}, {"Mcp-Name", "exec"}}},
      {"other version",
       {{"MCP-Protocol-Version", "2025-11-25"},
        {"Mcp-Method", "tools/call"},
        {"Mcp-Name", "exec"}}},
      {"no method", {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Name", "exec"}}},
      {"method in other case",
       {{"MCP-Protocol-Version", "2026-07-28"},
        {"Mcp-Method", "TOOLS/CALL"},
        {"Mcp-Name", "exec"}}},
      {"no name", {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}}},
      {"other name", Standard("other")},
      {"name twice",
       {{"MCP-Protocol-Version", "2026-07-28"},
        {"Mcp-Method", "tools/call"},
        {"Mcp-Name", "exec"},
        {"mcp-name", "exec"}}},
      {"bad base64 name", Standard("=?base64?ZXhlYw?=")},
  };
  for (const Case& c : cases) {
    auto failed = CheckStandardHeaders(c.headers, Call("exec"));
    ASSERT_TRUE(failed) << c.what;
    EXPECT_EQ(failed->rfind("Header mismatch: ", 0), 0u) << *failed;
  }
  json list = {
      {"jsonrpc", "2.0"},
      {"id", 2},
      {"method", "tools/list"},
      {"params", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}}}};
  EXPECT_FALSE(CheckStandardHeaders(
      {{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/list"}}, list));
  json read = {{"jsonrpc", "2.0"},
               {"id", 3},
               {"method", "resources/read"},
               {"params",
                {{"uri", "file:///a b"},
                 {"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}}}};
  EXPECT_FALSE(CheckStandardHeaders({{"MCP-Protocol-Version", "2026-07-28"},
                                     {"Mcp-Method", "resources/read"},
                                     {"Mcp-Name", "file:///a b"}},
                                    read));
}

TEST(McpHeadersParams, DeclaredPropertiesAreMirrored) {
  const json schema = {{"type", "object"},
                       {"properties",
                        {{"session", {{"type", "string"}, {"x-mcp-header", "Session"}}},
                         {"n", {{"type", "integer"}, {"x-mcp-header", "N"}}},
                         {"code", {{"type", "string"}}}}}};
  const auto decls = ParamHeaderDecls(schema);
  ASSERT_EQ(decls.size(), 2u);
  auto check = [&](const HeaderList& h, const json& args) {
    return CheckParamHeaders(h, decls, args);
  };
  EXPECT_FALSE(check({{"Mcp-Param-Session", "py-abc"}, {"mcp-param-n", "42"}},
                     {{"session", "py-abc"}, {"n", 42}}));
  EXPECT_FALSE(check({{"Mcp-Param-N", "42.0"}}, {{"n", 42}}));
  EXPECT_FALSE(check({}, {{"code", "x"}}));         // nothing to mirror
  EXPECT_FALSE(check({}, {{"session", nullptr}}));  // null: no header
  EXPECT_TRUE(check({}, {{"session", "py-abc"}}));  // missing
  EXPECT_TRUE(check({{"Mcp-Param-Session", "py-x"}}, {{"session", "py-abc"}}));  // mismatch
  EXPECT_TRUE(check({{"Mcp-Param-Session", "py-abc"}}, json::object()));         // header, no value
  EXPECT_TRUE(check({{"Mcp-Param-Session", "py\x01"}}, {{"session", "py\x01"}}));
  EXPECT_FALSE(check({{"Mcp-Param-Session", "=?base64?cHkBYQ==?="}}, {{"session",
                                                                       "py\x01"
                                                                       "a"}}));
  EXPECT_TRUE(check({{"Mcp-Param-N", "42x"}}, {{"n", 42}}));
}

}  // namespace
}  // namespace mcpexec::mcp_headers
