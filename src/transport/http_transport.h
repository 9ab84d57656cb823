// MCP over HTTP: the streamable HTTP transport at /mcp (protocol 2025-03-26
// and later) and the legacy HTTP+SSE transport of 2024-11-05 (GET on any
// path opens the stream, POSTs go to the endpoint it announces). Both share
// auth, DNS-rebinding protection, CORS for allowed origins, limits,
// sessions, /healthz, /readyz and /metrics. The HTTP server underneath is
// transport/http_server.h (Boost.Beast).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "model/config.h"
#include "protocol/health.h"
#include "protocol/mcp_session.h"
#include "transport/http_policy.h"
#include "transport/http_server.h"
#include "transport/http_session.h"
#include "transport/http_stateless.h"
#include "transport/mcp_headers.h"

namespace mcpexec {

// The HTTP limits, from the configuration and the descriptors we may open.
http::Limits LimitsFor(const Config& config);

// The MCP endpoints on the HTTP server: screening (auth, Host, Origin),
// routing, the streamable and legacy transports, probes and metrics, and
// the drain at shutdown.
class HttpTransport final : public http::Handler {
 public:
  // new_session_id: where session ids come from (random; a fuzz target
  // counts instead).
  // pool: the server's threads for calls (made in main; nullptr: the
  // sessions' fallback, McpSession::Options::pool).
  HttpTransport(Server& mcp_server, ServerHealth& health, const Config& config,
                SessionTable::NewId new_session_id = RandomSessionId, CallPool* pool = nullptr);

  // Serves until a termination signal arrives on signal_fd (see ServeHttp).
  int Run(int signal_fd);
  // The calls running in the open sessions.
  int64_t CallsInFlight();

  std::optional<http::Response> Screen(const http::Request& req, http::Headers* extra) override;
  bool TakesBody(const http::Request& req) override;
  bool Inline(const http::Request& req) override;
  void Handle(http::Request req, std::shared_ptr<http::Exchange> ex) override;
  void Refused(int status, const std::string& method, const std::string& path,
               const std::string& client) override;

 private:
  // The text of a 404 for a path this transport does not serve.
  std::string NotFoundHint(const http::Request& req) const;
  // A new MCP session from the table (which may end an idle one to make
  // room), with the eviction or refusal counted in /metrics.
  std::pair<std::string, std::shared_ptr<HttpSession>> NewSession(bool legacy,
                                                                  const std::string& client,
                                                                  std::string* why);
  static bool IsProbe(const std::string& path) { return path == "/healthz" || path == "/readyz"; }
  http::Response Preflight(const http::Request& req);
  void StreamablePost(const http::Request& req, const std::shared_ptr<http::Exchange>& exchange);
  void StatelessPost(const http::Request& req, const nlohmann::json& msg, jsonrpc::Inbound in,
                     const std::shared_ptr<http::Exchange>& exchange);
  std::optional<http::Response> CheckPostHeaders(const http::Request& req) const;
  // The body as JSON (bounded) and as a JSON-RPC message (jsonrpc::Classify),
  // or the 400 that refuses it.
  std::optional<http::Response> ParsePostMessage(const http::Request& req, nlohmann::json* msg,
                                                 jsonrpc::Inbound* in) const;
  std::optional<http::Response> SessionForPost(const http::Request& req, const jsonrpc::Inbound& in,
                                               std::shared_ptr<HttpSession>* session,
                                               http::Headers* session_header);
  void AnswerAsStream(http::Exchange& ex, const std::shared_ptr<HttpSession>& session,
                      const std::shared_ptr<Waiter>& waiter, const jsonrpc::RequestId& id,
                      http::Headers session_header, bool listen = false);
  // A call that sends nothing before its result (it asked for no
  // progress): answered application/json once done; meanwhile the
  // connection is watched, and a client that leaves ends the run.
  void AnswerWhenDone(const std::shared_ptr<http::Exchange>& exchange,
                      const std::shared_ptr<HttpSession>& session,
                      const std::shared_ptr<Waiter>& waiter, const jsonrpc::RequestId& id,
                      http::Headers session_header);
  // Every MCP session with calls that may run: the 2025 ones and those of
  // the stateless POSTs still going.
  std::vector<std::shared_ptr<HttpSession>> AllSessions();
  void StreamableGet(const http::Request& req, http::Exchange& ex);
  void StreamableDelete(const http::Request& req, http::Exchange& ex);
  void LegacyGet(const http::Request& req, http::Exchange& ex);
  void LegacyPost(const http::Request& req, http::Exchange& ex);
  bool ReserveStream();
  // Something a drain waits on moved (a stream flushed or closed).
  void Changed() { mcp_server_.changes().Notify(); }
  // Shutdown: the calls past the grace period are ended and answered.
  void Drain();
  void FlushRefusalLog(std::chrono::steady_clock::time_point now);

  Server& mcp_server_;  // the tool, the tasks, the resources
  ToolBackend& tools_;  // mcp_server_.tool()
  ServerHealth& health_;
  const Config& config_;
  const http_policy::Listen listen_;
  SessionTable sessions_;
  StatelessCalls stateless_;
  // The tool's input properties clients mirror in Mcp-Param-* headers.
  const std::vector<mcp_headers::ParamHeader> param_headers_;
  const std::string cors_allow_headers_;
  std::atomic<int64_t> streams_{0};       // open GET and legacy streams
  std::atomic<int64_t> post_streams_{0};  // POSTs answering as a stream, or awaiting JSON
  std::atomic<bool> stopping_{false};     // no new work; streams end
  // Refusal log lines, at most kRefusalLinesPerSecond (the rest counted).
  static constexpr int kRefusalLinesPerSecond = 50;
  std::mutex refusal_mu_;
  std::chrono::steady_clock::time_point refusal_window_ = std::chrono::steady_clock::now();
  int refusal_lines_ = 0;
  int64_t refusals_unlogged_ = 0;
  // Last: stopped and destroyed first, while what its callbacks reach lives.
  http::Server server_;
};

// Serves until a termination signal arrives on signal_fd; then stops taking
// work, lets running calls finish for the grace period, ends the rest with
// an answer to each and returns 0. Returns 1 (after logging why) if it
// cannot listen.
int ServeHttp(Server& server, ServerHealth& health, const Config& config, int signal_fd,
              CallPool* pool = nullptr);

}  // namespace mcpexec
