#include "http_transport.h"

#include <httplib.h>
#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "log.h"
#include "mcp_server.h"

namespace mcpexec {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string NewSessionId() {
  unsigned char bytes[16];
  if (getrandom(bytes, sizeof bytes, 0) != sizeof bytes) abort();
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) id += hex[b >> 4], id += hex[b & 15];
  return id;
}

std::string SseEvent(const json& msg) {
  return "event: message\ndata: " + msg.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

// A POST waiting for the answer to its request.
struct Waiter {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<json> answer;
};

// One MCP session. Answers to requests go to the POST that waits for them;
// everything else goes to the session's event streams.
class HttpSession {
 public:
  HttpSession(ToolBackend& backend, bool legacy)
      : legacy_(legacy), mcp_(backend, [this](const json& m) { Route(m); }) {}

  std::shared_ptr<Waiter> Expect(const json& id) {
    auto w = std::make_shared<Waiter>();
    std::lock_guard<std::mutex> lock(mu_);
    waiters_[id.dump()] = w;
    return w;
  }
  // Only this waiter: a client may reuse an id once answered, and this may
  // run after it did (a response's releaser runs when the bytes are gone).
  void Forget(const json& id, const std::shared_ptr<Waiter>& w) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = waiters_.find(id.dump());
    if (it != waiters_.end() && it->second == w) waiters_.erase(it);
  }
  // Waits up to `wait` for the next event of the streams.
  bool NextEvent(std::string* out, std::chrono::milliseconds wait) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, wait, [&] { return !events_.empty() || closed_; });
    if (events_.empty()) return false;
    *out = std::move(events_.front());
    events_.pop_front();
    return true;
  }
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
    mcp_.CancelAll();
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  void Touch() {
    std::lock_guard<std::mutex> lock(mu_);
    last_used_ = Clock::now();
  }
  Clock::time_point last_used() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_used_;
  }
  McpSession& mcp() { return mcp_; }
  std::atomic<int> streams{0};

 private:
  void Route(const json& m) {
    std::shared_ptr<Waiter> w;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!legacy_ && m.contains("id") && !m["id"].is_null()) {
        auto it = waiters_.find(m["id"].dump());
        if (it != waiters_.end()) w = it->second;
      }
      if (!w) {
        if (closed_) return;
        events_.push_back(SseEvent(m));
      }
    }
    if (w) {
      std::lock_guard<std::mutex> lock(w->mu);
      w->answer = m;
      w->cv.notify_all();
    } else {
      cv_.notify_all();
    }
  }

  const bool legacy_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Waiter>> waiters_;
  std::deque<std::string> events_;
  bool closed_ = false;
  Clock::time_point last_used_ = Clock::now();
  // Last: destroyed first, so that its destructor (which waits for the
  // session's calls) runs while Route() can still reach the members above.
  McpSession mcp_;
};

class SessionTable {
 public:
  explicit SessionTable(size_t max) : max_(max) {}
  std::pair<std::string, std::shared_ptr<HttpSession>> Create(ToolBackend& backend, bool legacy) {
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.size() >= max_) return {"", nullptr};
    std::string id = NewSessionId();
    auto s = std::make_shared<HttpSession>(backend, legacy);
    map_[id] = s;
    return {id, s};
  }
  std::shared_ptr<HttpSession> Find(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(id);
    if (it == map_.end()) return nullptr;
    it->second->Touch();
    return it->second;
  }
  std::shared_ptr<HttpSession> Remove(const std::string& id) {
    std::shared_ptr<HttpSession> s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = map_.find(id);
      if (it == map_.end()) return nullptr;
      s = it->second;
      map_.erase(it);
    }
    s->Close();
    return s;
  }
  int ExpireIdle(std::chrono::seconds idle) {
    std::vector<std::shared_ptr<HttpSession>> expired;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto now = Clock::now();
      for (auto it = map_.begin(); it != map_.end();) {
        if (it->second->streams == 0 && it->second->mcp().in_flight() == 0 &&
            now - it->second->last_used() > idle) {
          expired.push_back(it->second);
          it = map_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& s : expired) s->Close();
    return static_cast<int>(expired.size());
  }
  std::vector<std::shared_ptr<HttpSession>> All() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::shared_ptr<HttpSession>> out;
    for (auto& [id, s] : map_) out.push_back(s);
    return out;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.size();
  }
  void Clear() {
    for (auto& s : All()) s->Close();
    std::lock_guard<std::mutex> lock(mu_);
    map_.clear();
  }

 private:
  const size_t max_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<HttpSession>> map_;
};

void PlainError(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(message + "\n", "text/plain");
}

void JsonRpcHttpError(httplib::Response& res, int status, int code, const std::string& message) {
  res.status = status;
  res.set_content(jsonrpc::Error(nullptr, code, message).dump(), "application/json");
}

bool MediaTypeIs(const std::string& header, const char* type) {
  std::string h = header.substr(0, header.find(';'));
  h.erase(h.find_last_not_of(' ') + 1);
  return strcasecmp(h.c_str(), type) == 0;
}

bool Accepts(const std::string& accept, const char* type) {
  return accept.find(type) != std::string::npos || accept.find("*/*") != std::string::npos;
}

bool IsSupportedVersion(const std::string& v) {
  for (const auto& s : kSupportedProtocolVersions) {
    if (s == v) return true;
  }
  return false;
}

class HttpServer {
 public:
  HttpServer(ExecService& service, const Config& config)
      : service_(service),
        config_(config),
        listen_(http_policy::ParseAddr(config.addr)),
        sessions_(static_cast<size_t>(config.max_sessions)) {}

  int Run(int signal_fd);

 private:
  void Configure();
  bool Admissible(const httplib::Request& req, httplib::Response& res);
  void StreamablePost(const httplib::Request& req, httplib::Response& res);
  void StreamableGet(const httplib::Request& req, httplib::Response& res);
  void StreamableDelete(const httplib::Request& req, httplib::Response& res);
  void LegacyGet(const httplib::Request& req, httplib::Response& res);
  void LegacyPost(const httplib::Request& req, httplib::Response& res);
  // An SSE response that relays the session's events until it closes, the
  // client leaves or the server stops. first: written before anything else.
  void OpenEventStream(httplib::Response& res, std::shared_ptr<HttpSession> session,
                       std::string first, std::function<void()> on_close);
  bool ReserveStream();

  ExecService& service_;
  const Config& config_;
  const http_policy::Listen listen_;
  SessionTable sessions_;
  httplib::Server svr_;
  std::atomic<int64_t> streams_{0};
  std::atomic<bool> stopping_{false};   // no new work; streams end
  std::atomic<bool> abandoning_{false};  // grace is over: waiting POSTs give up
};

bool HttpServer::ReserveStream() {
  if (streams_.fetch_add(1) >= config_.max_streams) {
    streams_--;
    return false;
  }
  return true;
}

void HttpServer::OpenEventStream(httplib::Response& res, std::shared_ptr<HttpSession> session,
                                 std::string first, std::function<void()> on_close) {
  session->streams++;
  auto last_write = std::make_shared<Clock::time_point>(Clock::now());
  auto pending_first = std::make_shared<std::string>(std::move(first));
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, session, last_write, pending_first](size_t, httplib::DataSink& sink) {
        if (!pending_first->empty()) {
          std::string f = std::move(*pending_first);
          pending_first->clear();
          return sink.write(f.data(), f.size());
        }
        // On shutdown a stream stays while its session still has a call
        // running (legacy SSE answers travel on it).
        if (abandoning_ || session->closed() || (stopping_ && session->mcp().in_flight() == 0)) {
          return false;
        }
        std::string event;
        if (session->NextEvent(&event, std::chrono::milliseconds(1000))) {
          *last_write = Clock::now();
          return sink.write(event.data(), event.size());
        }
        // A comment now and then: keeps proxies from timing out and finds a
        // client that left (the write fails).
        if (Clock::now() - *last_write > std::chrono::seconds(15)) {
          *last_write = Clock::now();
          static const char kPing[] = ": keepalive\n\n";
          return sink.write(kPing, sizeof kPing - 1);
        }
        return true;
      },
      [this, session, on_close](bool) {
        session->streams--;
        streams_--;
        if (on_close) on_close();
      });
}

bool HttpServer::Admissible(const httplib::Request& req, httplib::Response& res) {
  if (!config_.auth_token.empty() &&
      !http_policy::TokenMatches(req.get_header_value("X-MCP-AUTH"), config_.auth_token)) {
    res.status = 401;
    res.set_content("unauthorized", "text/plain");  // the contract's exact body
    return false;
  }
  if (!http_policy::HostAllowed(req.get_header_value("Host"), listen_.loopback)) {
    PlainError(res, 403, "forbidden: Host is not a loopback name (DNS-rebinding protection)");
    return false;
  }
  if (!http_policy::OriginAllowed(req.get_header_value("Origin"), config_.allowed_origins,
                                  listen_.loopback)) {
    PlainError(res, 403, "forbidden: Origin not allowed (MCP_EXEC_ALLOWED_ORIGINS)");
    return false;
  }
  return true;
}

void HttpServer::StreamablePost(const httplib::Request& req, httplib::Response& res) {
  if (stopping_) return PlainError(res, 503, "the server is shutting down");
  if (!MediaTypeIs(req.get_header_value("Content-Type"), "application/json")) {
    return PlainError(res, 415, "Content-Type must be application/json");
  }
  const std::string accept = req.get_header_value("Accept");
  if (!Accepts(accept, "application/json") || !Accepts(accept, "text/event-stream")) {
    return PlainError(res, 406, "Accept must list application/json and text/event-stream");
  }
  json msg;
  try {
    msg = json::parse(req.body);
  } catch (const json::exception& e) {
    return JsonRpcHttpError(res, 400, jsonrpc::kParseError, std::string("parse error: ") + e.what());
  }
  if (!msg.is_object()) {
    return JsonRpcHttpError(res, 400, jsonrpc::kInvalidRequest,
                            msg.is_array() ? "batch requests are not supported" : "a message must be a JSON object");
  }
  const bool has_method = msg.contains("method") && msg["method"].is_string();
  const bool is_request = has_method && msg.contains("id");
  if (is_request && !msg["id"].is_string() && !msg["id"].is_number_integer()) {
    return JsonRpcHttpError(res, 400, jsonrpc::kInvalidRequest, "id must be a string or an integer");
  }
  if (!has_method && !msg.contains("result") && !msg.contains("error")) {
    return JsonRpcHttpError(res, 400, jsonrpc::kInvalidRequest, "method is missing");
  }
  std::shared_ptr<HttpSession> session;
  std::string session_id;
  if (is_request && msg["method"] == "initialize") {
    auto created = sessions_.Create(service_, false);
    if (!created.second) return PlainError(res, 503, "too many sessions (MCP_EXEC_MAX_SESSIONS)");
    session_id = created.first;
    session = created.second;
    res.set_header("Mcp-Session-Id", session_id);
    log::Info("session_open", {{"transport", "http"}, {"sessions", sessions_.size()}});
  } else {
    session_id = req.get_header_value("Mcp-Session-Id");
    if (session_id.empty()) {
      return JsonRpcHttpError(res, 400, jsonrpc::kInvalidRequest,
                              "Mcp-Session-Id header is required (initialize first)");
    }
    session = sessions_.Find(session_id);
    if (!session) return JsonRpcHttpError(res, 404, jsonrpc::kInvalidRequest, "session not found");
    if (req.has_header("MCP-Protocol-Version") &&
        !IsSupportedVersion(req.get_header_value("MCP-Protocol-Version"))) {
      return JsonRpcHttpError(res, 400, jsonrpc::kInvalidRequest,
                              "unsupported MCP-Protocol-Version: " +
                                  req.get_header_value("MCP-Protocol-Version"));
    }
  }
  if (!is_request) {
    session->mcp().Handle(msg);
    res.status = 202;
    return;
  }
  const json id = msg["id"];
  auto waiter = session->Expect(id);
  session->mcp().Handle(msg);
  {
    std::lock_guard<std::mutex> lock(waiter->mu);
    if (waiter->answer) {
      session->Forget(id, waiter);
      res.set_content(waiter->answer->dump(-1, ' ', false, json::error_handler_t::replace),
                      "application/json");
      return;
    }
  }
  // A call that takes time: answer as an event stream, with comments while
  // it runs, so that a client that leaves is noticed and its run ended.
  auto last_write = std::make_shared<Clock::time_point>(Clock::now());
  // No call may outlive its longest timeout plus the grace of its teardown:
  // past that, answer with an error instead of waiting for ever.
  const auto give_up = Clock::now() + std::chrono::seconds(config_.max_timeout_s + 60);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, session, waiter, id, last_write, give_up](size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> lock(waiter->mu);
        waiter->cv.wait_for(lock, std::chrono::milliseconds(500), [&] { return waiter->answer.has_value(); });
        if (waiter->answer) {
          std::string event = SseEvent(*waiter->answer);
          lock.unlock();
          sink.write(event.data(), event.size());
          sink.done();
          return true;
        }
        lock.unlock();
        if (abandoning_) return false;
        if (Clock::now() > give_up) {
          log::Error("answer_lost", {{"transport", "http"}});
          std::string event = SseEvent(jsonrpc::Error(id, jsonrpc::kInternalError, "no answer from the run"));
          sink.write(event.data(), event.size());
          sink.done();
          return true;
        }
        if (Clock::now() - *last_write > std::chrono::seconds(1)) {
          *last_write = Clock::now();
          static const char kPing[] = ": running\n\n";
          if (!sink.write(kPing, sizeof kPing - 1)) return false;
        }
        return true;
      },
      [session, waiter, id](bool success) {
        session->Forget(id, waiter);
        std::lock_guard<std::mutex> lock(waiter->mu);
        if (!waiter->answer) {
          // The client left before the answer: end its run at once.
          log::Info("client_gone", {{"transport", "http"}});
          session->mcp().Handle({{"jsonrpc", "2.0"},
                                 {"method", "notifications/cancelled"},
                                 {"params", {{"requestId", id}, {"reason", "client disconnected"}}}});
        }
      });
}

void HttpServer::StreamableGet(const httplib::Request& req, httplib::Response& res) {
  if (stopping_) return PlainError(res, 503, "the server is shutting down");
  if (!Accepts(req.get_header_value("Accept"), "text/event-stream")) {
    return PlainError(res, 406, "Accept must list text/event-stream");
  }
  std::string session_id = req.get_header_value("Mcp-Session-Id");
  if (session_id.empty()) return PlainError(res, 400, "Mcp-Session-Id header is required");
  auto session = sessions_.Find(session_id);
  if (!session) return PlainError(res, 404, "session not found");
  if (!ReserveStream()) return PlainError(res, 503, "too many open streams (MCP_EXEC_MAX_STREAMS)");
  // The server sends nothing unprompted today; the stream stays open for
  // what a later version may send, with periodic comments.
  OpenEventStream(res, session, ": stream open\n\n", nullptr);
}

void HttpServer::StreamableDelete(const httplib::Request& req, httplib::Response& res) {
  std::string session_id = req.get_header_value("Mcp-Session-Id");
  if (session_id.empty()) return PlainError(res, 400, "Mcp-Session-Id header is required");
  if (!sessions_.Remove(session_id)) return PlainError(res, 404, "session not found");
  log::Info("session_closed", {{"transport", "http"}, {"why", "delete"}});
  res.status = 200;
}

void HttpServer::LegacyGet(const httplib::Request& req, httplib::Response& res) {
  if (stopping_) return PlainError(res, 503, "the server is shutting down");
  if (!ReserveStream()) return PlainError(res, 503, "too many open streams (MCP_EXEC_MAX_STREAMS)");
  auto created = sessions_.Create(service_, true);
  if (!created.second) {
    streams_--;
    return PlainError(res, 503, "too many sessions (MCP_EXEC_MAX_SESSIONS)");
  }
  std::string id = created.first;
  log::Info("session_open", {{"transport", "sse"}, {"sessions", sessions_.size()}});
  // The session lives as long as its stream.
  OpenEventStream(res, created.second, "event: endpoint\ndata: /message?sessionId=" + id + "\n\n",
                  [this, id] {
                    if (sessions_.Remove(id)) {
                      log::Info("session_closed", {{"transport", "sse"}, {"why", "stream ended"}});
                    }
                  });
}

void HttpServer::LegacyPost(const httplib::Request& req, httplib::Response& res) {
  auto session = sessions_.Find(req.get_param_value("sessionId"));
  if (!session) return PlainError(res, 404, "session not found");
  if (!MediaTypeIs(req.get_header_value("Content-Type"), "application/json")) {
    return PlainError(res, 415, "Content-Type must be application/json");
  }
  json msg;
  try {
    msg = json::parse(req.body);
  } catch (const json::exception& e) {
    return PlainError(res, 400, std::string("invalid JSON: ") + e.what());
  }
  session->mcp().Handle(msg);  // answers arrive on the session's stream
  res.status = 202;
  res.set_content("Accepted", "text/plain");
}

void HttpServer::Configure() {
  const size_t pool = static_cast<size_t>(config_.max_streams + config_.max_concurrent +
                                          config_.max_queue + 16);
  // Every open stream and every running call holds a worker: size the pool
  // so that the limits, not the pool, decide.
  svr_.new_task_queue = [pool] { return new httplib::ThreadPool(pool); };
  svr_.set_payload_max_length(static_cast<size_t>(EffectiveMaxRequestBytes(config_)));
  svr_.set_read_timeout(30);
  svr_.set_write_timeout(30);
  svr_.set_keep_alive_timeout(5);
  svr_.set_keep_alive_max_count(1000);  // the default (5) reconnects a busy client every 5 calls
  svr_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // Health probes are exempt from auth: they reveal nothing and load
    // balancers rarely send headers. /metrics is not exempt.
    if (req.path == "/healthz" || req.path == "/readyz") return httplib::Server::HandlerResponse::Unhandled;
    // A body without a length would be read until the client closes (or the
    // read timeout): refuse it at once instead of holding a worker.
    if ((req.method == "POST" || req.method == "PUT" || req.method == "PATCH") &&
        !req.has_header("Content-Length") && req.get_header_value("Transfer-Encoding").empty()) {
      PlainError(res, 411, "Content-Length is required");
      return httplib::Server::HandlerResponse::Handled;
    }
    return Admissible(req, res) ? httplib::Server::HandlerResponse::Unhandled
                                : httplib::Server::HandlerResponse::Handled;
  });
  svr_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  svr_.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (!stopping_ && service_.Ready()) return res.set_content("ready\n", "text/plain");
    PlainError(res, 503, stopping_ ? "shutting down" : "not ready: the sandbox is starting, refused, or at capacity");
  });
  svr_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    Metrics::Gauges g = service_.Gauges();
    g.sessions = static_cast<int64_t>(sessions_.size());
    g.streams = streams_;
    res.set_content(service_.metrics().Render(g), "text/plain; version=0.0.4");
  });
  if (config_.transport == Transport::kHttp) {
    svr_.Post("/mcp", [this](const auto& req, auto& res) { StreamablePost(req, res); });
    svr_.Get("/mcp", [this](const auto& req, auto& res) { StreamableGet(req, res); });
    svr_.Delete("/mcp", [this](const auto& req, auto& res) { StreamableDelete(req, res); });
    auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Allow", "GET, POST, DELETE");
      PlainError(res, 405, "method not allowed");
    };
    svr_.Put("/mcp", not_allowed);
    svr_.Patch("/mcp", not_allowed);
  } else {
    svr_.Post("/message", [this](const auto& req, auto& res) { LegacyPost(req, res); });
    // The reference answers the stream's GET on any path: /sse and / both work.
    svr_.Get(".*", [this](const auto& req, auto& res) { LegacyGet(req, res); });
  }
}

int HttpServer::Run(int signal_fd) {
  Configure();
  std::string bind_host = listen_.host.empty() ? "0.0.0.0" : listen_.host;
  if (!svr_.bind_to_port(bind_host, listen_.port)) {
    log::Error("listen_failed", {{"addr", config_.addr}, {"errno", strerror(errno)}});
    fprintf(stderr, "mcp-exec: cannot listen on %s: %s\n", config_.addr.c_str(), strerror(errno));
    return 1;
  }
  if (!listen_.loopback && config_.auth_token.empty()) {
    log::Warn("no_auth", {{"addr", config_.addr},
                          {"why", "listening beyond loopback without MCP_EXEC_AUTH_TOKEN: anyone who "
                                  "reaches the port can run code"}});
  }
  log::Info("listening", {{"transport", TransportName(config_.transport)},
                          {"addr", config_.addr},
                          {"auth", !config_.auth_token.empty()}});
  std::atomic<bool> done{false};
  std::thread server([&] {
    svr_.listen_after_bind();
    done = true;
  });
  std::string why = "signal";
  for (;;) {
    pollfd p{signal_fd, POLLIN, 0};
    int rc = poll(&p, 1, 1000);
    if (rc > 0) break;
    if (done) {
      why = "server stopped";
      break;
    }
    int expired = sessions_.ExpireIdle(std::chrono::seconds(config_.session_idle_s));
    if (expired) log::Info("sessions_expired", {{"count", expired}, {"sessions", sessions_.size()}});
  }
  // Refuse new work (503, and /readyz fails so balancers drain us); running
  // calls may finish for the grace period, then they are ended. Only then
  // stop the listener: cpp-httplib cuts open streams when it stops.
  log::Info("stopping", {{"why", why}, {"grace_s", config_.shutdown_grace_s}});
  stopping_ = true;
  auto busy = [&] {
    for (auto& s : sessions_.All()) {
      if (s->mcp().in_flight() > 0) return true;
    }
    return false;
  };
  auto grace_end = Clock::now() + std::chrono::seconds(config_.shutdown_grace_s);
  while (busy() && Clock::now() < grace_end) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (busy()) log::Warn("grace_over", {{"sessions", sessions_.size()}});
  abandoning_ = true;
  for (auto& s : sessions_.All()) s->mcp().CancelAll();
  svr_.stop();
  server.join();
  sessions_.Clear();
  return 0;
}

}  // namespace

int ServeHttp(ExecService& service, const Config& config, int signal_fd) {
  HttpServer server(service, config);
  return server.Run(signal_fd);
}

}  // namespace mcpexec
