#include "transport/http_transport.h"

#include <poll.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "base/bounded_json.h"
#include "base/log.h"
#include "protocol/stateless.h"

namespace mcpexec {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

http::Response PlainError(int status, const std::string& message) {
  http::Response r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = message + "\n";
  return r;
}

// id: the request's, when it was read (null only when it could not be).
http::Response JsonRpcHttpError(int status, int code, const std::string& message,
                                const json& id = nullptr) {
  http::Response r;
  r.status = status;
  r.content_type = "application/json";
  // Never a strict dump: the message may quote the client's bytes (a parse
  // error's, a header's), which need not be UTF-8.
  r.body = LenientDump(jsonrpc::Error(id, code, message));
  return r;
}

// A request's id to echo in an error (null for a notification).
json IdOf(const jsonrpc::Inbound& in) { return in.id ? in.id->ToJson() : json(nullptr); }

http::Response JsonAnswer(const json& msg) {
  http::Response r;
  r.content_type = "application/json";
  r.body = LenientDump(msg);
  return r;
}

// A tools/call that asked for no progress: nothing goes on its stream before
// its result, so it is answered as JSON (an event stream only when a message
// must come first, as the MCP TypeScript SDK's transport does).
bool IsCallWithoutProgress(const jsonrpc::Inbound& in) {
  return in.method == "tools/call" && !ProgressTokenOf(in.params);
}

bool MediaTypeIs(const std::string& header, const char* type) {
  std::string h = header.substr(0, header.find(';'));
  h.erase(h.find_last_not_of(' ') + 1);
  return strcasecmp(h.c_str(), type) == 0;
}

bool Accepts(const std::string& accept, const char* type) {
  return accept.find(type) != std::string::npos || accept.find("*/*") != std::string::npos;
}

// Headers a browser may send on a cross-origin request to us: those of both
// eras, and the tool's Mcp-Param-* ones.
std::string CorsAllowHeaders(const std::vector<mcp_headers::ParamHeader>& params) {
  std::string h =
      "Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, X-MCP-AUTH, "
      "Authorization, Mcp-Method, Mcp-Name";
  for (const auto& p : params) h += ", " + p.header;
  return h;
}
constexpr const char* kCorsAllowMethods = "GET, POST, DELETE, OPTIONS";
bool IsOAuthPath(const std::string& path) {
  return path.rfind("/.well-known/", 0) == 0 || path == "/register" || path == "/authorize" ||
         path == "/token";
}
constexpr const char* kNoOAuth =
    "this server takes a static token (MCP_EXEC_AUTH_TOKEN), sent as `Authorization: Bearer "
    "<token>` or `X-MCP-AUTH: <token>`; it has no OAuth (nothing to discover or register)";

}  // namespace

http::Limits LimitsFor(const Config& config) {
  http::Limits l;
  l.max_body_bytes = static_cast<uint64_t>(EffectiveMaxRequestBytes(config));
  // Each connection is a descriptor; keep room for the runs' pipes and the
  // zygote's sockets, and never let a connection flood exhaust them.
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    int64_t reserve = 64 + 8 * (config.max_concurrent + config.max_queue);
    int64_t room = static_cast<int64_t>(nofile.rlim_cur) - reserve;
    l.max_connections = static_cast<size_t>(std::clamp<int64_t>(room, 16, 1024));
  }
  l.max_connections_per_client = std::min<size_t>(l.max_connections_per_client, l.max_connections);
  return l;
}

HttpTransport::HttpTransport(Server& mcp_server, ServerHealth& health, const Config& config,
                             SessionTable::NewId new_session_id, CallPool* pool)
    : mcp_server_(mcp_server),
      tools_(mcp_server.tool()),
      health_(health),
      config_(config),
      listen_(http_policy::ParseAddr(config.addr)),
      sessions_(static_cast<size_t>(config.max_sessions), std::move(new_session_id), pool),
      stateless_(pool),
      param_headers_(mcp_headers::ParamHeaderDecls(tools_.ToolDescriptor()["inputSchema"])),
      cors_allow_headers_(CorsAllowHeaders(param_headers_)),
      server_(*this, LimitsFor(config)) {}

std::vector<std::shared_ptr<HttpSession>> HttpTransport::AllSessions() {
  auto all = sessions_.All();
  for (auto& s : stateless_.All()) all.push_back(std::move(s));
  return all;
}

int64_t HttpTransport::CallsInFlight() {
  int64_t n = 0;
  for (const auto& s : AllSessions()) n += s->mcp().in_flight();
  return n;
}

std::optional<http::Response> HttpTransport::Screen(const http::Request& req,
                                                    http::Headers* extra) {
  // Health probes are exempt: they reveal nothing and load balancers rarely
  // send headers. /metrics is not exempt.
  if (IsProbe(req.path)) return std::nullopt;
  const std::string origin = req.Header("Origin");
  const bool origin_ok =
      http_policy::OriginAllowed(origin, config_.allowed_origins, listen_.loopback);
  if (!origin.empty() && origin_ok) {
    // Every answer to an allowed browser origin lets its page read it (a
    // 401 included, so that the page can tell the user why).
    extra->emplace_back("Access-Control-Allow-Origin", origin);
    extra->emplace_back("Vary", "Origin");
    extra->emplace_back("Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate");
  }
  // OAuth discovery (/.well-known/oauth-protected-resource and the like) and
  // the endpoints a client falls back to without it (/register, /authorize,
  // /token) are answered 404 before the token check: a 401 there sends
  // clients looking for an authorization server that does not exist.
  if (IsOAuthPath(req.path)) {
    return PlainError(404, std::string("not found: ") + kNoOAuth);
  }
  // A CORS preflight never carries credentials, so OPTIONS needs no token;
  // it still passes the Host and Origin checks.
  if (req.method != "OPTIONS" && !config_.auth_token.empty() &&
      !http_policy::RequestHasToken(req.Header("X-MCP-AUTH"), req.Header("Authorization"),
                                    config_.auth_token)) {
    http::Response r;
    r.status = 401;
    r.content_type = "text/plain";
    // Starts with the contract's "unauthorized", then says what to send.
    r.body = std::string("unauthorized: ") + kNoOAuth;
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"mcp-exec\"");
    return r;
  }
  if (!http_policy::HostAllowed(req.Header("Host"), listen_.loopback)) {
    return PlainError(403, "forbidden: Host is not a loopback name (DNS-rebinding protection)");
  }
  if (!origin_ok) {
    return PlainError(403, "forbidden: Origin not allowed (MCP_EXEC_ALLOWED_ORIGINS)");
  }
  return std::nullopt;
}

bool HttpTransport::TakesBody(const http::Request& req) {
  // The one route of each transport that reads a message (Handle's routing).
  if (req.method != "POST") return false;
  return config_.transport == Transport::kHttp ? req.path == "/mcp" : req.path == "/message";
}

bool HttpTransport::Inline(const http::Request& req) {
  // Answered on the I/O thread, touching nothing shared: liveness never
  // waits behind MCP work or another component's lock.
  return req.path == "/healthz" || req.method == "OPTIONS";
}

http::Response HttpTransport::Preflight(const http::Request& req) {
  http::Response r;
  r.status = 204;
  r.headers = {{"Allow", kCorsAllowMethods}};
  if (!req.Header("Origin").empty()) {  // allowed, or Screen refused it
    r.headers.emplace_back("Access-Control-Allow-Methods", kCorsAllowMethods);
    r.headers.emplace_back("Access-Control-Allow-Headers", cors_allow_headers_);
    r.headers.emplace_back("Access-Control-Max-Age", "600");
  }
  return r;
}

void HttpTransport::Handle(http::Request req, std::shared_ptr<http::Exchange> ex) {
  const std::string& path = req.path;
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (path == "/healthz" && get) {
    http::Response r;
    r.content_type = "text/plain";
    r.body = "ok\n";
    return ex->Reply(std::move(r));
  }
  if (path == "/readyz" && get) {
    if (!stopping_ && health_.Ready()) {
      http::Response r;
      r.content_type = "text/plain";
      r.body = "ready\n";
      return ex->Reply(std::move(r));
    }
    return ex->Reply(
        PlainError(503, stopping_ ? "shutting down"
                                  : "not ready: the sandbox is starting, refused, or at capacity"));
  }
  if (path == "/metrics" && get) {
    http::Response r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = health_.MetricsText(static_cast<int64_t>(sessions_.size()), streams_);
    return ex->Reply(std::move(r));
  }
  if (config_.transport == Transport::kHttp) {
    if (path != "/mcp") return ex->Reply(PlainError(404, NotFoundHint(req)));
    if (req.method == "OPTIONS") return ex->Reply(Preflight(req));
    if (req.method == "POST") return StreamablePost(req, ex);
    if (req.method == "GET") return StreamableGet(req, *ex);
    if (req.method == "DELETE") return StreamableDelete(req, *ex);
    http::Response r = PlainError(405, "method not allowed");
    r.headers.emplace_back("Allow", "GET, POST, DELETE");
    return ex->Reply(std::move(r));
  }
  if (req.method == "OPTIONS") return ex->Reply(Preflight(req));
  if (req.method == "POST" && path == "/message") return LegacyPost(req, *ex);
  // The reference answers the stream's GET on any path: /sse and / both work.
  if (req.method == "GET") return LegacyGet(req, *ex);
  ex->Reply(PlainError(404, NotFoundHint(req)));
}

// A 404 that says where the endpoint is: clients configured for the other
// transport, or with a stray slash, learn what to change.
std::string HttpTransport::NotFoundHint(const http::Request& req) const {
  std::string hint = "not found: " + req.method + " " + req.path.substr(0, 128) + ". ";
  if (config_.transport == Transport::kHttp) {
    hint +=
        "This server speaks streamable HTTP (MCP_EXEC_TRANSPORT=http): its one endpoint is /mcp";
    if (req.path == "/mcp/") hint += " (no trailing slash)";
    if (req.path == "/sse" || req.path == "/message") {
      hint +=
          "; the legacy HTTP+SSE transport (GET /sse, POST /message) needs "
          "MCP_EXEC_TRANSPORT=sse, or point the client at /mcp as a streamable HTTP server";
    }
  } else {
    hint +=
        "This server speaks the legacy HTTP+SSE transport (MCP_EXEC_TRANSPORT=sse): GET /sse "
        "opens the stream, which announces the /message URL to POST to";
    if (req.path == "/mcp" || req.path == "/mcp/") {
      hint += "; a streamable HTTP client needs MCP_EXEC_TRANSPORT=http (endpoint /mcp)";
    }
  }
  return hint + "; /healthz, /readyz and /metrics are there too";
}

void HttpTransport::Refused(int status, const std::string& method, const std::string& path,
                            const std::string& client) {
  // A probe's "not ready" is an answer, not a refusal.
  if (status == 503 && path == "/readyz") return;
  health_.RecordHttpRefused(status);
  // The log is written synchronously: a flood of refusals must not become a
  // flood of lines (nor stall the I/O threads). The metric counts them all.
  {
    std::lock_guard<std::mutex> lock(refusal_mu_);
    FlushRefusalLog(Clock::now());
    if (refusal_lines_ >= kRefusalLinesPerSecond) {
      ++refusals_unlogged_;
      return;
    }
    ++refusal_lines_;
  }
  // Metadata only: never a header's value (the token) nor the body, and the
  // path without its query string. Bounded: both come from the client.
  log::Warn("http_refused", {{"status", status},
                             {"method", method.substr(0, 16)},
                             {"path", path.substr(0, 256)},
                             {"client", client}});
}

// With refusal_mu_ held.
void HttpTransport::FlushRefusalLog(Clock::time_point now) {
  if (now - refusal_window_ < std::chrono::seconds(1)) return;
  if (refusals_unlogged_ > 0) {
    log::Warn("http_refused_unlogged",
              {{"count", refusals_unlogged_},
               {"why", "more than " + std::to_string(kRefusalLinesPerSecond) +
                           " refusals a second; see mcp_exec_http_refused_total"}});
  }
  refusals_unlogged_ = 0;
  refusal_lines_ = 0;
  refusal_window_ = now;
}

bool HttpTransport::ReserveStream() {
  if (streams_.fetch_add(1) >= config_.max_streams) {
    streams_--;
    return false;
  }
  return true;
}

// The streamable transport's POST, in steps: the headers, the message, its
// session, then the answer (at once, or as an event stream while it runs).
void HttpTransport::StreamablePost(const http::Request& req,
                                   const std::shared_ptr<http::Exchange>& exchange) {
  http::Exchange& ex = *exchange;
  if (auto refusal = CheckPostHeaders(req)) return ex.Reply(std::move(*refusal));
  // The message is classified here, once: its JSON-RPC envelope, then its
  // era; the session dispatches what this hands it without asking again.
  json msg;
  jsonrpc::Inbound in;
  if (auto refusal = ParsePostMessage(req, &msg, &in)) return ex.Reply(std::move(*refusal));
  const bool is_request = in.kind == jsonrpc::Inbound::Kind::kRequest;
  // While it drains the server takes nothing new, but a task's client may
  // still poll it (its run has the grace too).
  if (stopping_ && !(is_request && IsTaskMethod(in.method))) {
    return ex.Reply(PlainError(503, "the server is shutting down"));
  }
  const std::string version_header(mcp_headers::TrimOws(req.Header("MCP-Protocol-Version")));
  const Era era =
      eras::Classify(msg, req.HasHeader("MCP-Protocol-Version") ? &version_header : nullptr);
  if (era == Era::kStateless) return StatelessPost(req, msg, std::move(in), exchange);
  std::shared_ptr<HttpSession> session;
  http::Headers session_header;
  if (auto refusal = SessionForPost(req, in, &session, &session_header)) {
    return ex.Reply(std::move(*refusal));
  }
  if (!is_request) {
    session->mcp().Deliver(std::move(in), Era::kLegacy);
    http::Response r;
    r.status = 202;
    return ex.Reply(std::move(r));
  }
  const jsonrpc::RequestId id = *in.id;
  const bool without_progress = IsCallWithoutProgress(in);
  auto waiter = session->Expect(id);
  session->mcp().Deliver(std::move(in), Era::kLegacy);
  {
    std::lock_guard<std::mutex> lock(waiter->mu);
    if (waiter->answer) {
      session->Forget(id, waiter);
      http::Response r = JsonAnswer(*waiter->answer);
      r.headers = std::move(session_header);
      return ex.Reply(std::move(r));
    }
  }
  if (without_progress) {
    return AnswerWhenDone(exchange, session, waiter, id, std::move(session_header));
  }
  AnswerAsStream(ex, session, waiter, id, std::move(session_header));
}

// Protocol 2026-07-28: no session id; the request is checked against its
// headers, then served on a session of its own, answered as JSON when it is
// done at once, else as an event stream of its own (a listen's stays open).
void HttpTransport::StatelessPost(const http::Request& req, const json& msg, jsonrpc::Inbound in,
                                  const std::shared_ptr<http::Exchange>& exchange) {
  http::Exchange& ex = *exchange;
  if (in.kind != jsonrpc::Inbound::Kind::kRequest) {
    // The era has no client notification over HTTP that we act on (closing
    // a call's stream cancels it), and this server sends no requests.
    http::Response r;
    r.status = 202;
    return ex.Reply(std::move(r));
  }
  if (auto refusal = CheckStatelessPost(req, msg, in, param_headers_, tools_.ToolName())) {
    return ex.Reply(std::move(*refusal));
  }
  const bool listen = in.method == "subscriptions/listen";
  if (listen && !ReserveStream()) {
    return ex.Reply(JsonRpcHttpError(
        503, jsonrpc::kInternalError,
        "too many open streams (MCP_EXEC_MAX_STREAMS=" + std::to_string(config_.max_streams) +
            "); retry when one closes",
        IdOf(in)));
  }
  auto session = stateless_.Open(mcp_server_, req.client);
  const jsonrpc::RequestId id = *in.id;
  const bool without_progress = IsCallWithoutProgress(in);
  auto waiter = session->Expect(id);
  session->mcp().Deliver(std::move(in), Era::kStateless);  // checked above, with its headers
  {
    std::lock_guard<std::mutex> lock(waiter->mu);
    if (waiter->answer && waiter->early.empty() && !listen) {
      session->Forget(id, waiter);
      return ex.Reply(JsonAnswer(*waiter->answer));
    }
  }
  if (without_progress) return AnswerWhenDone(exchange, session, waiter, id, {});
  AnswerAsStream(ex, session, waiter, id, {}, listen);
}

std::optional<http::Response> HttpTransport::CheckPostHeaders(const http::Request& req) const {
  if (!MediaTypeIs(req.Header("Content-Type"), "application/json")) {
    return PlainError(415, "Content-Type must be application/json");
  }
  const std::string accept = req.Header("Accept");
  if (!Accepts(accept, "application/json") || !Accepts(accept, "text/event-stream")) {
    return PlainError(406, "Accept must list application/json and text/event-stream");
  }
  return std::nullopt;
}

std::optional<http::Response> HttpTransport::ParsePostMessage(const http::Request& req, json* msg,
                                                              jsonrpc::Inbound* in) const {
  bounded_json::Parsed parsed = bounded_json::Parse(req.body);
  if (!parsed.ok()) {
    if (parsed.too_deep) {
      return JsonRpcHttpError(400, jsonrpc::kInvalidRequest, parsed.error,
                              bounded_json::TopLevelId(req.body));
    }
    return JsonRpcHttpError(400, jsonrpc::kParseError, parsed.error);
  }
  *msg = std::move(parsed.value);
  *in = jsonrpc::Classify(*msg);
  if (in->kind == jsonrpc::Inbound::Kind::kRefused) {
    http::Response r = JsonAnswer(in->refusal);
    r.status = 400;
    return r;
  }
  return std::nullopt;
}

std::pair<std::string, std::shared_ptr<HttpSession>> HttpTransport::NewSession(
    bool legacy, const std::string& client, std::string* why) {
  bool evicted = false;
  auto created = sessions_.Create(mcp_server_, legacy, client, why, &evicted);
  if (evicted || !created.second) health_.RecordMcpSessionTable(evicted);
  return created;
}

// initialize opens a session (its id goes back in a header); anything else
// names an open one.
std::optional<http::Response> HttpTransport::SessionForPost(const http::Request& req,
                                                            const jsonrpc::Inbound& in,
                                                            std::shared_ptr<HttpSession>* session,
                                                            http::Headers* session_header) {
  if (in.kind == jsonrpc::Inbound::Kind::kRequest && in.method == "initialize") {
    std::string why;
    auto created = NewSession(false, req.client, &why);
    if (!created.second) return PlainError(503, why);
    *session = created.second;
    session_header->emplace_back("Mcp-Session-Id", created.first);
    log::Info("session_open", {{"transport", "http"}, {"sessions", sessions_.size()}});
    return std::nullopt;
  }
  const std::string session_id = req.Header("Mcp-Session-Id");
  if (session_id.empty()) {
    return JsonRpcHttpError(400, jsonrpc::kInvalidRequest,
                            "Mcp-Session-Id header is required (initialize first)", IdOf(in));
  }
  *session = sessions_.Find(session_id);
  if (!*session) {
    return JsonRpcHttpError(404, jsonrpc::kInvalidRequest,
                            "session not found: it ended (DELETE, idle past "
                            "MCP_EXEC_SESSION_IDLE_S, evicted for room, or a server restart) or "
                            "never existed; initialize again for a new one",
                            IdOf(in));
  }
  if (req.HasHeader("MCP-Protocol-Version") &&
      !eras::IsLegacyVersion(req.Header("MCP-Protocol-Version"))) {
    return JsonRpcHttpError(
        400, jsonrpc::kInvalidRequest,
        "unsupported MCP-Protocol-Version: " + req.Header("MCP-Protocol-Version") +
            " (supported: " + eras::LegacyVersionList() + ")",
        IdOf(in));
  }
  return std::nullopt;
}

void HttpTransport::StreamableGet(const http::Request& req, http::Exchange& ex) {
  if (stopping_) return ex.Reply(PlainError(503, "the server is shutting down"));
  if (!Accepts(req.Header("Accept"), "text/event-stream")) {
    return ex.Reply(PlainError(406, "Accept must list text/event-stream"));
  }
  const std::string session_id = req.Header("Mcp-Session-Id");
  if (session_id.empty()) return ex.Reply(PlainError(400, "Mcp-Session-Id header is required"));
  auto session = sessions_.Find(session_id);
  if (!session) return ex.Reply(PlainError(404, "session not found"));
  if (!ReserveStream()) {
    return ex.Reply(PlainError(503, "too many open streams (MCP_EXEC_MAX_STREAMS)"));
  }
  // The server sends nothing unprompted today; the stream stays open for
  // what a later version may send, with a comment every 15 s that keeps
  // proxies from timing out and finds a client that left.
  http::Response head;
  head.content_type = "text/event-stream";
  head.headers = {{"Cache-Control", "no-cache"}};
  head.body = ": stream open\n\n";
  http::StreamOptions options;
  options.heartbeat_every = std::chrono::seconds(15);
  options.heartbeat = ": keepalive\n\n";
  session->streams++;
  options.on_close = [this, session](bool) {
    session->Detached();
    session->streams--;
    streams_--;
    Changed();
  };
  options.on_flushed = [this] { Changed(); };
  session->Attach(ex.OpenStream(std::move(head), std::move(options)));
}

void HttpTransport::StreamableDelete(const http::Request& req, http::Exchange& ex) {
  const std::string session_id = req.Header("Mcp-Session-Id");
  if (session_id.empty()) return ex.Reply(PlainError(400, "Mcp-Session-Id header is required"));
  if (!sessions_.Remove(session_id)) return ex.Reply(PlainError(404, "session not found"));
  log::Info("session_closed", {{"transport", "http"}, {"why", "delete"}});
  ex.Reply(http::Response{});
}

void HttpTransport::LegacyGet(const http::Request& req, http::Exchange& ex) {
  if (stopping_) return ex.Reply(PlainError(503, "the server is shutting down"));
  if (!ReserveStream()) {
    return ex.Reply(PlainError(503, "too many open streams (MCP_EXEC_MAX_STREAMS)"));
  }
  std::string why;
  auto created = NewSession(true, req.client, &why);
  if (!created.second) {
    streams_--;
    return ex.Reply(PlainError(503, why));
  }
  const std::string id = created.first;
  auto session = created.second;
  log::Info("session_open", {{"transport", "sse"}, {"sessions", sessions_.size()}});
  http::Response head;
  head.content_type = "text/event-stream";
  head.headers = {{"Cache-Control", "no-cache"}};
  head.body = "event: endpoint\ndata: /message?sessionId=" + id + "\n\n";
  http::StreamOptions options;
  options.heartbeat_every = std::chrono::seconds(15);
  options.heartbeat = ": keepalive\n\n";
  session->streams++;
  // The session lives as long as its stream.
  options.on_close = [this, session, id](bool) {
    session->Detached();
    session->streams--;
    streams_--;
    if (sessions_.Remove(id)) {
      log::Info("session_closed", {{"transport", "sse"}, {"why", "stream ended"}});
    }
    Changed();
  };
  options.on_flushed = [this] { Changed(); };
  session->Attach(ex.OpenStream(std::move(head), std::move(options)));
}

void HttpTransport::LegacyPost(const http::Request& req, http::Exchange& ex) {
  auto session = sessions_.Find(req.Param("sessionId"));
  if (!session) return ex.Reply(PlainError(404, "session not found"));
  if (!MediaTypeIs(req.Header("Content-Type"), "application/json")) {
    return ex.Reply(PlainError(415, "Content-Type must be application/json"));
  }
  if (stopping_) return ex.Reply(PlainError(503, "the server is shutting down"));
  bounded_json::Parsed parsed = bounded_json::Parse(req.body);
  if (parsed.too_deep) {
    return ex.Reply(JsonRpcHttpError(400, jsonrpc::kInvalidRequest, parsed.error,
                                     bounded_json::TopLevelId(req.body)));
  }
  if (!parsed.ok()) return ex.Reply(PlainError(400, "invalid JSON: " + parsed.error));
  // Classified once, here; every answer, refusals too, goes on the
  // session's stream (this transport has no other way back).
  jsonrpc::Inbound in = jsonrpc::Classify(parsed.value);
  // What the stream owes the client, so that shutdown answers all of it.
  if (in.kind == jsonrpc::Inbound::Kind::kRequest) {
    session->ExpectOnStream(*in.id);
  } else if (in.kind == jsonrpc::Inbound::Kind::kNotification &&
             in.method == "notifications/cancelled") {
    // A cancelled call is not answered.
    if (auto id = jsonrpc::RequestId::From(in.params.value("requestId", json()))) {
      session->NotExpected(*id);
    }
  }
  session->mcp().Deliver(std::move(in), Era::kLegacy);  // answers arrive on the session's stream
  http::Response r;
  r.status = 202;
  r.content_type = "text/plain";
  r.body = "Accepted";
  ex.Reply(std::move(r));
}

void HttpTransport::Drain() {
  // Open listens have nothing more coming: each gets its closing result.
  for (auto& s : stateless_.All()) s->mcp().EndListens();
  // Calls, and the runs of tasks (whose clients poll from anywhere).
  auto running = [&] {
    for (auto& s : AllSessions()) {
      if (s->mcp().in_flight() > 0) return true;
    }
    return mcp_server_.tasks().working() > 0;
  };
  // A session with nothing left to say ends its streams; legacy answers
  // travel on them, so not before.
  auto end_quiet_streams = [&] {
    for (auto& s : AllSessions()) {
      if (s->mcp().in_flight() == 0 && s->Quiet()) s->EndStreams();
    }
  };
  // Woken by what moves the answers along (Server::changes: a call's or a
  // task's end, a stream's flush or close), never by a clock but the
  // deadline's.
  Changes& changes = mcp_server_.changes();
  auto wait = [&](Clock::time_point until, const std::function<bool()>& done) {
    for (;;) {
      const uint64_t seen = changes.Seen();
      end_quiet_streams();
      if (done()) return true;
      if (!changes.WaitPast(seen, until)) return done();
    }
  };
  wait(Clock::now() + std::chrono::seconds(config_.shutdown_grace_s), [&] { return !running(); });
  // Every call still running ends now and is answered: its output so far
  // with reason "shutdown", or a tool error if it had not started.
  const auto answered_by = Clock::now() + std::chrono::seconds(10);
  if (running()) {
    log::Warn("grace_over", {{"sessions", sessions_.size()}});
    for (auto& s : AllSessions()) s->mcp().CancelAll(CancelReason::kShutdown);
    if (!wait(answered_by, [&] { return !running(); })) log::Error("calls_outlived_grace", {});
  }
  // What is still owed has no answer coming (a call its client cancelled,
  // or one that did not end in time): answered with an error, so that no
  // client is left with a stream that just stops.
  int owed = 0;
  for (auto& s : AllSessions()) {
    owed += s->AnswerOverdue(Clock::now(), true, "the server is shutting down: the call was ended");
    s->EndStreams();
  }
  if (owed > 0) log::Warn("answered_at_shutdown", {{"calls", owed}});
  // The answers reach their sockets before the listener stops.
  wait(std::max(answered_by, Clock::now() + std::chrono::seconds(1)),
       [&] { return post_streams_ == 0 && streams_ == 0; });
}

int HttpTransport::Run(int signal_fd) {
  std::string error;
  if (!server_.Listen(listen_.host, listen_.port, &error)) {
    log::Error("listen_failed", {{"addr", config_.addr}, {"error", error}});
    fprintf(stderr, "mcp-exec: cannot listen on %s: %s\n", config_.addr.c_str(), error.c_str());
    return 1;
  }
  if (!listen_.loopback && config_.auth_token.empty()) {
    log::Warn("no_auth", {{"addr", config_.addr},
                          {"why",
                           "listening beyond loopback without MCP_EXEC_AUTH_TOKEN: anyone who "
                           "reaches the port can run code"}});
  }
  log::Info("listening", {{"transport", TransportName(config_.transport)},
                          {"addr", config_.addr},
                          {"auth", !config_.auth_token.empty()}});
  server_.Start();
  auto next_expiry = Clock::now();
  for (;;) {
    pollfd p{signal_fd, POLLIN, 0};
    if (poll(&p, 1, 250) > 0) break;
    auto now = Clock::now();
    for (auto& s : AllSessions()) {
      if (int n = s->AnswerOverdue(now, false, "no answer from the run")) {
        log::Error("answer_lost", {{"transport", "http"}, {"calls", n}});
      }
    }
    sessions_.Reap();
    stateless_.Reap();
    {
      std::lock_guard<std::mutex> lock(refusal_mu_);
      FlushRefusalLog(now);
    }
    if (now >= next_expiry) {
      next_expiry = now + std::chrono::seconds(1);
      int expired = sessions_.ExpireIdle(std::chrono::seconds(config_.session_idle_s));
      if (expired) {
        log::Info("sessions_expired", {{"count", expired}, {"sessions", sessions_.size()}});
      }
    }
  }
  // Refuse new work (503, and /readyz fails so balancers drain us); running
  // calls may finish for the grace period, then they are ended and
  // answered. Only then stop the listener.
  log::Info("stopping", {{"why", "signal"}, {"grace_s", config_.shutdown_grace_s}});
  stopping_ = true;
  tools_.ServerStopping();
  Drain();
  server_.Stop();
  sessions_.CloseAll();
  // Every session is destroyed here: each waits for its calls (cancelled
  // by CloseAll and the drain, they end within the executor's bounds).
  sessions_.DestroyClosed();
  stateless_.DestroyAll();
  return 0;
}

int ServeHttp(Server& server, ServerHealth& health, const Config& config, int signal_fd,
              CallPool* pool) {
  HttpTransport transport(server, health, config, RandomSessionId, pool);
  return transport.Run(signal_fd);
}

}  // namespace mcpexec
