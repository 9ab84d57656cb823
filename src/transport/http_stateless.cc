#include "transport/http_stateless.h"

#include <utility>

#include "protocol/stateless.h"

namespace mcpexec {

using json = nlohmann::json;

namespace {

http::Response ErrorAnswer(int status, const json& response) {
  http::Response r;
  r.status = status;
  r.content_type = "application/json";
  r.body = LenientDump(response);  // it may quote the client's bytes
  return r;
}

http::Response Mismatch(const json& id, const std::string& message) {
  return ErrorAnswer(400, jsonrpc::Error(id, stateless::kHeaderMismatch, message));
}

}  // namespace

std::optional<http::Response> CheckStatelessPost(
    const http::Request& req, const json& msg, const jsonrpc::Inbound& in,
    const std::vector<mcp_headers::ParamHeader>& param_headers, const std::string& tool_name) {
  const json id = in.id ? in.id->ToJson() : json();
  const json& params = in.params;
  if (auto refused = stateless::CheckEnvelope(id, params)) {
    return ErrorAnswer(refused->http_status, refused->response);
  }
  const std::string version = params["_meta"][stateless::kMetaProtocolVersion];
  if (req.HasHeader("MCP-Protocol-Version")) {
    const std::string header(mcp_headers::TrimOws(req.Header("MCP-Protocol-Version")));
    if (header != version) {
      return Mismatch(id, "Header mismatch: MCP-Protocol-Version is \"" + header +
                              "\" but params._meta names " + version);
    }
  }
  if (auto refused = stateless::CheckVersion(id, version)) {
    return ErrorAnswer(refused->http_status, refused->response);
  }
  if (auto why = mcp_headers::CheckStandardHeaders(req.headers, msg)) return Mismatch(id, *why);
  const std::string& method = in.method;
  if (auto refused = stateless::CheckMethod(id, method)) {
    return ErrorAnswer(refused->http_status, refused->response);
  }
  if (method == "tools/call" && params.value("name", json()) == tool_name) {
    const json arguments = params.value("arguments", json::object());
    if (auto why = mcp_headers::CheckParamHeaders(req.headers, param_headers, arguments)) {
      return Mismatch(id, *why);
    }
  }
  return std::nullopt;
}

std::shared_ptr<HttpSession> StatelessCalls::Open(Server& server, const std::string& client) {
  auto session = std::make_shared<HttpSession>(server, false, true, client, pool_);
  session->client = client;
  std::lock_guard<std::mutex> lock(mu_);
  live_.push_back(session);
  return session;
}

std::vector<std::shared_ptr<HttpSession>> StatelessCalls::All() {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

size_t StatelessCalls::Reap() {
  std::vector<std::shared_ptr<HttpSession>> done;  // destroyed after the lock
  std::lock_guard<std::mutex> lock(mu_);
  done = TakeFinished(live_);
  return live_.size();
}

void StatelessCalls::DestroyAll() {
  std::vector<std::shared_ptr<HttpSession>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(live_);
  }
  // Closed first (their streams and waiters let go), then destroyed.
  for (auto& s : all) s->Close();
}

}  // namespace mcpexec
