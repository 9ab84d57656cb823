// The HTTP headers a request of MCP 2026-07-28 mirrors from its body
// (basic/transports/streamable-http.mdx, "Standard Request Headers",
// "Custom Headers", "Value Encoding", "Server Validation"): MCP-Protocol-
// Version, Mcp-Method, Mcp-Name (tools/call, prompts/get: params.name;
// resources/read: params.uri; tasks/get, tasks/cancel, tasks/update:
// params.taskId, ext-tasks' "Routing Headers") and Mcp-Param-{Name} for the tool's input
// properties marked x-mcp-header. A header that is missing, repeated, holds
// a character outside the visible ASCII range, space and tab, or says
// something else than the body is a HeaderMismatch (-32020, HTTP 400).
// Pure: over the request's header list and its parsed body.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcpexec::mcp_headers {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// Leading and trailing spaces and tabs removed.
std::string_view TrimOws(std::string_view v);

// A header value as the body would have it: trimmed, and decoded when it is
// "=?base64?{base64 of UTF-8}?=" (the markers exact and lowercase); nullopt
// when it holds an invalid character or the encoded payload is not strict
// base64 of UTF-8. A value with only one of the markers is taken literally.
std::optional<std::string> DecodeValue(std::string_view raw);

// MCP-Protocol-Version, Mcp-Method and, where the method has one, Mcp-Name,
// each present once and equal to the body's. The message of the first
// failure ("Header mismatch: ..."), or nullopt.
std::optional<std::string> CheckStandardHeaders(const HeaderList& headers,
                                                const nlohmann::json& msg);

// A property of the tool's input that clients mirror: its header name
// (Mcp-Param-{x-mcp-header}) and the property it mirrors.
struct ParamHeader {
  std::string header;
  std::string property;
};
std::vector<ParamHeader> ParamHeaderDecls(const nlohmann::json& input_schema);

// Each declared property with a value in the call's arguments has its
// header, equal to the value (strings as they are, integers in decimal,
// booleans as true/false); a property with no value (absent or null) has
// none. The message of the first failure, or nullopt.
std::optional<std::string> CheckParamHeaders(const HeaderList& headers,
                                             const std::vector<ParamHeader>& decls,
                                             const nlohmann::json& arguments);

}  // namespace mcpexec::mcp_headers
