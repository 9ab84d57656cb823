// Streamable HTTP in MCP revision 2026-07-28 (basic/transports/
// streamable-http.mdx): no session id; each POST carries one message whose
// _meta names the version, and the headers that mirror it. A request is
// checked (its envelope, its version, its headers against its body, the
// method) and then served on an MCP session of its own that lives as long
// as its one request: several POSTs at once never share ids, and closing a
// POST's stream cancels only its own call. Internal to the HTTP transport.
#pragma once

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "protocol/mcp_session.h"
#include "transport/http_server.h"
#include "transport/http_session.h"
#include "transport/mcp_headers.h"

namespace mcpexec {

// The refusal of a stateless POST, before anything is dispatched, in the
// order the revision's ladder gives: the _meta envelope (-32602, 400),
// MCP-Protocol-Version against _meta (-32020, 400), the version (-32022,
// 400), Mcp-Method and Mcp-Name against the body (-32020, 400), a method
// this era does not serve (-32601, 404), and the tool's Mcp-Param-*
// headers on tools/call (-32020, 400). Each error keeps the request's id.
// nullopt: serve it. `param_headers`: the tool's (ParamHeaderDecls).
// `msg` is the body, `in` the request it holds (jsonrpc::Classify).
std::optional<http::Response> CheckStatelessPost(
    const http::Request& req, const nlohmann::json& msg, const jsonrpc::Inbound& in,
    const std::vector<mcp_headers::ParamHeader>& param_headers, const std::string& tool_name);

// The sessions of the stateless POSTs still going: the transport's drain
// and its count of calls in flight see them as they see the 2025 sessions.
class StatelessCalls {
 public:
  // pool: the server's threads for the calls.
  explicit StatelessCalls(CallPool* pool = nullptr) : pool_(pool) {}
  std::shared_ptr<HttpSession> Open(Server& server, const std::string& client);
  std::vector<std::shared_ptr<HttpSession>> All();
  // Destroys those whose POST is over (nothing but this list holds them and
  // no call runs). Returns how many remain.
  size_t Reap();
  // Destroys them all; each first waits for its call, which the drain
  // ended.
  void DestroyAll();

 private:
  CallPool* const pool_;
  std::mutex mu_;
  std::vector<std::shared_ptr<HttpSession>> live_;
};

}  // namespace mcpexec
