#include "transport/http_server.h"

#include <linux/sockios.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace mcpexec::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using beast::error_code;

namespace {

bool IEquals(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

std::string Trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t") + 1);
  return s;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 && HexDigit(s[i + 2]) >= 0) {
      out += static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2]));
      i += 2;
    } else if (s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

const char* Reason(int status) {
  // clang-format off
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
  // clang-format on
}

Response Plain(int status, std::string text) {
  Response r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = std::move(text);
  return r;
}

std::string Chunk(const std::string& data) {
  char size[32];
  snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

// Beast's parser with our own storage: it counts the header fields (Beast
// bounds only their total size) and keeps them in arrival order.
class RequestParser : public bhttp::basic_parser<true> {
 public:
  explicit RequestParser(const Limits& limits) : max_fields_(limits.max_header_fields) {
    header_limit(limits.max_header_bytes);
    // Beast 1.74 compares a Content-Length with an unset limit as if the
    // limit were 0: use "no limit" while the header is read, and the real
    // cap once the request has been screened (before any body byte).
    body_limit(std::numeric_limits<uint64_t>::max());
  }
  Request& request() { return req_; }

 private:
  void on_request_impl(bhttp::verb, beast::string_view method, beast::string_view target,
                       int version, error_code&) override {
    req_.method.assign(method.data(), method.size());
    req_.target.assign(target.data(), target.size());
    req_.version = version;
  }
  void on_response_impl(int, beast::string_view, int, error_code& ec) override {
    ec = bhttp::error::bad_version;  // a request parser never sees a status line
  }
  void on_field_impl(bhttp::field, beast::string_view name, beast::string_view value,
                     error_code& ec) override {
    if (req_.headers.size() >= max_fields_) {
      ec = bhttp::error::header_limit;
      return;
    }
    req_.headers.emplace_back(std::string(name.data(), name.size()),
                              std::string(value.data(), value.size()));
  }
  void on_header_impl(error_code&) override {}
  // Nothing is reserved from the announced length: a body costs memory only
  // as its bytes arrive.
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  size_t on_body_impl(beast::string_view body, error_code&) override {
    req_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code&) override {
    req_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  const size_t max_fields_;
  Request req_;
};

// Runs the handlers that may take a while, so that the I/O threads never do.
class WorkerPool {
 public:
  void Start(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
  }
  void Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!stopped_) {
        tasks_.push_back(std::move(fn));
        cv_.notify_one();
        return;
      }
    }
    fn();  // after Stop(): on the caller's thread, so that no callback is lost
  }
  // Runs what is queued, then joins.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopped_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        fn = std::move(tasks_.front());
        tasks_.pop_front();
      }
      fn();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  bool stopped_ = false;
};

}  // namespace

std::string Request::Header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (strcasecmp(k.c_str(), name.c_str()) == 0) return v;
  }
  return "";
}

bool Request::HasHeader(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (strcasecmp(k.c_str(), name.c_str()) == 0) return true;
  }
  return false;
}

std::string Request::Param(const std::string& name) const {
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    std::string item = query.substr(start, end - start);
    size_t eq = item.find('=');
    if (PercentDecode(item.substr(0, eq)) == name) {
      return eq == std::string::npos ? "" : PercentDecode(item.substr(eq + 1));
    }
    start = end + 1;
  }
  return "";
}

class Connection;

struct Server::Impl {
  Impl(Handler& h, Limits l) : handler(h), limits(l) {}

  void Accept();
  void OnAccepted(tcp::socket socket);
  void Unregister(Connection* c, const std::string& client, bool counted);

  Handler& handler;
  const Limits limits;
  mutable std::mutex mu;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> conns;  // within the limits
  std::map<std::string, size_t> per_client;
  std::atomic<int> refusing{0};  // connections being told 429 or 503
  std::atomic<bool> stopped{false};
  WorkerPool workers;
  // Declared after what a connection's destructor touches: handlers still
  // queued when the context goes hold connections.
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  asio::steady_timer accept_retry{ioc};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::thread> io_threads;
};

// What the application holds of a streamed response. The bytes reach the
// socket on the connection's strand; this object may outlive the connection.
class StreamImpl final : public Stream, public std::enable_shared_from_this<StreamImpl> {
 public:
  StreamImpl(std::weak_ptr<Connection> conn, Server::Impl& server, StreamOptions options)
      : conn_(std::move(conn)), server_(server), options_(std::move(options)) {}
  bool Write(std::string bytes) override;
  void End() override;
  bool Flushed() const override { return !open_ || unflushed_ <= 0; }
  bool Open() const override { return open_; }

  // From the connection: n bytes of earlier Writes reached the socket (or
  // were dropped).
  void Sent(size_t n) { unflushed_ -= static_cast<int64_t>(n); }
  void Closed(bool completed) {
    open_ = false;
    if (closed_.exchange(true) || !options_.on_close) return;
    auto cb = options_.on_close;
    server_.workers.Post([cb, completed] { cb(completed); });
  }
  const StreamOptions& options() const { return options_; }

 private:
  std::weak_ptr<Connection> conn_;
  Server::Impl& server_;
  const StreamOptions options_;
  std::atomic<bool> open_{true}, ended_{false}, closed_{false};
  std::atomic<int64_t> unflushed_{0};
};

// One client connection. Everything below runs on the connection's strand;
// the Post* functions are the way in from other threads.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server::Impl& server, tcp::socket socket, std::string client, bool counted)
      : server_(server),
        limits_(server.limits),
        socket_(std::move(socket)),
        deadline_(socket_.get_executor()),
        heartbeat_(socket_.get_executor()),
        buffer_(limits_.max_header_bytes + 64 * 1024),
        client_(std::move(client)),
        counted_(counted) {}
  ~Connection() {
    if (stream_) stream_->Closed(false);
    server_.Unregister(this, client_, counted_);
  }

  void Start() {
    asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->ReadRequest(); });
  }
  // Over a connection limit: told so at once, then closed.
  void Refuse(int status, std::string text) {
    asio::dispatch(socket_.get_executor(), [self = shared_from_this(), status, text] {
      self->server_.handler.Refused(status, "", "", self->client_);
      self->keep_alive_ = false;
      self->phase_ = Phase::kResponding;
      self->Enqueue(self->Serialize(Plain(status, text), false), 0);
      self->DoWrite();
    });
  }
  void Shutdown() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
  }

  void PostReply(Response r) {
    asio::post(socket_.get_executor(), [self = shared_from_this(), r = std::move(r)]() mutable {
      self->OnReply(std::move(r));
    });
  }
  void PostOpenStream(std::shared_ptr<StreamImpl> s, Response head) {
    asio::post(socket_.get_executor(),
               [self = shared_from_this(), s, head = std::move(head)]() mutable {
                 self->OnOpenStream(s, std::move(head));
               });
  }
  void PostStreamWrite(std::shared_ptr<StreamImpl> s, std::string bytes) {
    asio::post(socket_.get_executor(),
               [self = shared_from_this(), s, bytes = std::move(bytes)]() mutable {
                 if (self->stream_ != s || self->stream_ended_) return s->Sent(bytes.size());
                 size_t n = bytes.size();
                 self->Enqueue(self->chunked_ ? Chunk(bytes) : std::move(bytes), n);
                 self->DoWrite();
               });
  }
  void PostStreamEnd(std::shared_ptr<StreamImpl> s) {
    asio::post(socket_.get_executor(), [self = shared_from_this(), s] {
      if (self->stream_ != s || self->stream_ended_) return;
      self->stream_ended_ = true;
      self->heartbeat_.cancel();
      // HTTP/1.0: no last chunk, the body ends with the connection.
      self->Enqueue(self->chunked_ ? "0\r\n\r\n" : "", 0);
      self->end_queued_ = true;
      self->DoWrite();
    });
  }

 private:
  enum class Phase { kReading, kHandling, kResponding, kStreaming, kLingering, kClosed };
  enum class Deadline { kNone, kIdle, kHeader, kBody, kWrite, kLinger };

  // ---------------------------------------------------------------- reading
  void ReadRequest() {
    phase_ = Phase::kReading;
    parser_.emplace(limits_);
    extra_.clear();
    method_.clear();
    path_.clear();
    request_start_ = Clock::now();
    // Bytes of a next request already here: its header deadline counts at
    // once; otherwise the idle one first.
    if (buffer_.size() > 0) {
      Arm(Deadline::kHeader, request_start_ + limits_.header_timeout);
    } else {
      Arm(Deadline::kIdle, request_start_ + limits_.idle_timeout);
    }
    bhttp::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, size_t) { self->OnHeader(ec); });
  }

  static bool IsParseError(const error_code& ec) {
    return ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
           ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
  }

  void OnHeader(error_code ec) {
    Disarm();
    if (phase_ == Phase::kClosed) return;
    Request& req = parser_->request();
    // For the log of a refusal: what of the request line is known.
    method_ = req.method;
    path_ = req.target.substr(0, req.target.find('?'));
    if (timed_out_ != Deadline::kNone) return OnTimeout();
    if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
      return Fail(431, "request header fields too large (at most " +
                           std::to_string(limits_.max_header_fields) + " fields and " +
                           std::to_string(limits_.max_header_bytes) + " bytes)");
    }
    if (ec) return IsParseError(ec) ? Fail(400, "malformed request") : CloseNow();

    req.client = client_;
    size_t q = req.target.find('?');
    req.path = path_;
    req.query = q == std::string::npos ? "" : req.target.substr(q + 1);
    version_ = req.version;
    head_ = req.method == "HEAD";
    keep_alive_ = parser_->keep_alive() && ++requests_ < limits_.keep_alive_max;
    if (req.path.empty() || (req.path[0] != '/' && !(req.method == "OPTIONS" && req.path == "*"))) {
      return Fail(400, "the request target must be a path");
    }
    int hosts = 0;
    for (const auto& [k, v] : req.headers) hosts += IEquals(k, "Host");
    if (hosts > 1) return Fail(400, "more than one Host header");

    if (auto refusal = server_.handler.Screen(req, &extra_)) return Fail(std::move(*refusal));

    const std::string te = req.Header("Transfer-Encoding");
    // Only a request routed to a handler that reads a body has its body
    // read: a probe, a preflight, a GET or a wrong method is answered as if
    // it had none, and the connection closes after the answer (what of the
    // body still comes is drained, bounded, and dropped, never held).
    const auto announced = parser_->content_length();
    if ((req.HasHeader("Transfer-Encoding") || (announced && *announced > 0)) &&
        !server_.handler.TakesBody(req)) {
      keep_alive_ = false;
      return Dispatch();
    }
    if (req.HasHeader("Transfer-Encoding") && !IEquals(Trim(te), "chunked")) {
      return Fail(501, "Transfer-Encoding other than chunked is not supported");
    }
    if ((req.method == "POST" || req.method == "PUT" || req.method == "PATCH") &&
        !req.HasHeader("Content-Length") && !req.HasHeader("Transfer-Encoding")) {
      // Without a length the body would last until the client closes.
      return Fail(411, "Content-Length is required");
    }
    if (req.HasHeader("Content-Encoding") &&
        !IEquals(Trim(req.Header("Content-Encoding")), "identity")) {
      // Never decoded: a few KiB of gzip can inflate past any cap.
      return Fail(415, "Content-Encoding is not supported: send the body as is");
    }
    auto length = parser_->content_length();
    if (length && *length > limits_.max_body_bytes) return TooLarge();
    if (parser_->is_done()) return Dispatch();

    if (IEquals(Trim(req.Header("Expect")), "100-continue")) {
      // Never a wait on the I/O thread: only when nothing the client has not
      // read is still queued on the socket do these few bytes go, at once and
      // whole. A client that reads nothing gets no 100 and sends its body
      // after its own wait (RFC 9110, 10.1.1).
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      int queued = -1;
      if (ioctl(socket_.native_handle(), SIOCOUTQ, &queued) == 0 && queued == 0) {
        (void)!send(socket_.native_handle(), kContinue, sizeof kContinue - 1,
                    MSG_DONTWAIT | MSG_NOSIGNAL);
      }
    }
    // From here the parser counts decoded (chunked) bytes against the cap.
    parser_->body_limit(limits_.max_body_bytes);
    body_start_ = Clock::now();
    body_received_ = 0;
    ArmBodyDeadline();
    ReadBody();
  }

  // The body must keep moving: every byte received buys 1/body_min_rate of a
  // second beyond body_timeout. A body sent at the minimum rate or faster
  // never runs out; one that stalls, or trickles, is cut within
  // body_timeout / (1 - its rate / the minimum), whatever length it announced.
  void ArmBodyDeadline() {
    Arm(Deadline::kBody,
        body_start_ + limits_.body_timeout +
            std::chrono::milliseconds(body_received_ * 1000 / limits_.body_min_rate));
  }
  void ReadBody() {
    bhttp::async_read_some(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, size_t n) { self->OnBodyPart(ec, n); });
  }
  void OnBodyPart(error_code ec, size_t n) {
    if (phase_ == Phase::kClosed) return;
    if (!ec && timed_out_ == Deadline::kNone && !parser_->is_done()) {
      body_received_ += n;
      ArmBodyDeadline();
      return ReadBody();
    }
    OnBody(ec);
  }

  void OnBody(error_code ec) {
    Disarm();
    if (phase_ == Phase::kClosed) return;
    if (timed_out_ != Deadline::kNone) return OnTimeout();
    if (ec == bhttp::error::body_limit) return TooLarge();
    if (ec) return IsParseError(ec) ? Fail(400, "malformed request body") : CloseNow();
    Dispatch();
  }

  void TooLarge() {
    Fail(413,
         "request body too large (limit " + std::to_string(limits_.max_body_bytes) + " bytes)");
  }

  void Dispatch();

  void OnTimeout() {
    Deadline which = timed_out_;
    timed_out_ = Deadline::kNone;
    if (which == Deadline::kHeader) return Fail(408, "the request header took too long");
    if (which == Deadline::kBody) return Fail(408, "the request body took too long");
    // Idle between requests, a write that made no progress, the end of a
    // lingering close: nothing to say.
    CloseNow();
  }

  // --------------------------------------------------------------- answering
  void OnReply(Response r) {
    if (phase_ != Phase::kHandling) return;
    if (r.status >= 400) Report(r.status);
    phase_ = Phase::kResponding;
    Enqueue(Serialize(r, false), 0);
    DoWrite();
  }

  void OnOpenStream(std::shared_ptr<StreamImpl> s, Response head) {
    if (phase_ != Phase::kHandling) return s->Closed(false);
    phase_ = Phase::kStreaming;
    stream_ = s;
    stream_ended_ = false;
    // Between writes no operation holds the connection: the stream does,
    // until it ends or the connection closes.
    self_ = shared_from_this();
    // HTTP/1.0 has no chunked encoding: the body ends with the connection.
    chunked_ = version_ >= 11;
    if (!chunked_) keep_alive_ = false;
    std::string first = std::move(head.body);
    head.body.clear();
    Enqueue(Serialize(head, true), 0);
    if (!first.empty()) Enqueue(chunked_ ? Chunk(first) : first, 0);
    DoWrite();
    if (s->options().heartbeat_every.count() > 0) Heartbeat();
    WatchPeer();
  }

  // While a response streams nothing else reads the socket: a read kept
  // pending sees at once that the client went away (EOF, reset), which
  // otherwise only a failing heartbeat would show, up to two heartbeats
  // later. What such a stream holds (an SSE session, its Python sessions)
  // then ends at once. Bytes that do arrive (a pipelined request) are kept
  // for after the stream, and the heartbeat is the watch from then on.
  void WatchPeer() {
    watching_ = true;
    socket_.async_read_some(
        buffer_.prepare(4096),
        [self = shared_from_this()](error_code ec, size_t n) { self->OnPeerRead(ec, n); });
  }
  void OnPeerRead(error_code ec, size_t n) {
    watching_ = false;
    if (phase_ == Phase::kClosed) return;
    if (!ec) buffer_.commit(n);
    if (resume_after_watch_) {
      resume_after_watch_ = false;
      return Next();  // the stream ended while the watch was pending
    }
    if (ec && ec != asio::error::operation_aborted) CloseNow();  // the client is gone
  }

  void Heartbeat() {
    heartbeat_.expires_after(stream_->options().heartbeat_every);
    heartbeat_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || !self->stream_ || self->stream_ended_ || self->phase_ != Phase::kStreaming) return;
      if (Clock::now() - self->last_write_ >= self->stream_->options().heartbeat_every) {
        const std::string& h = self->stream_->options().heartbeat;
        self->Enqueue(self->chunked_ ? Chunk(h) : h, 0);
        self->DoWrite();
      }
      self->Heartbeat();
    });
  }

  std::string Serialize(const Response& r, bool stream) const {
    std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + Reason(r.status) + "\r\n";
    if (!r.content_type.empty()) out += "Content-Type: " + r.content_type + "\r\n";
    for (const auto& [k, v] : r.headers) out += k + ": " + v + "\r\n";
    for (const auto& [k, v] : extra_) out += k + ": " + v + "\r\n";
    if (stream) {
      if (version_ >= 11) out += "Transfer-Encoding: chunked\r\n";
    } else if (r.status != 204) {
      out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
    }
    if (keep_alive_) {
      out += "Connection: keep-alive\r\nKeep-Alive: timeout=" +
             std::to_string(limits_.idle_timeout.count() / 1000) + "\r\n";
    } else {
      out += "Connection: close\r\n";
    }
    out += "\r\n";
    if (!stream && !head_ && r.status != 204) out += r.body;
    return out;
  }

  // payload: how many of the bytes are a stream's Write (Flushed() waits
  // for them).
  void Enqueue(std::string bytes, size_t payload) {
    out_.push_back(std::move(bytes));
    out_payload_ += payload;
  }

  void DoWrite() {
    if (writing_ || out_.empty() || phase_ == Phase::kClosed) return;
    writing_ = true;
    wbuf_.clear();
    for (auto& s : out_) wbuf_ += s;
    out_.clear();
    wpayload_ = out_payload_;
    out_payload_ = 0;
    wend_ = end_queued_;
    end_queued_ = false;
    Arm(Deadline::kWrite, Clock::now() + limits_.write_timeout);
    asio::async_write(socket_, asio::buffer(wbuf_),
                      [self = shared_from_this()](error_code ec, size_t) { self->OnWritten(ec); });
  }

  void OnWritten(error_code ec) {
    writing_ = false;
    Disarm();
    if (phase_ == Phase::kClosed) return;
    if (timed_out_ != Deadline::kNone || ec) {
      timed_out_ = Deadline::kNone;
      return CloseNow();  // the client is gone, or reads nothing
    }
    last_write_ = Clock::now();
    if (stream_) stream_->Sent(wpayload_);
    if (wend_) {
      // The stream's end is out: the response is complete.
      auto s = std::move(stream_);
      stream_ = nullptr;
      s->Closed(true);
      auto keep = std::move(self_);
      if (watching_) {
        // The next read waits for the watch's: cancelled, it resumes there.
        resume_after_watch_ = true;
        error_code ignored;
        socket_.cancel(ignored);
        return;
      }
      return Next();
    }
    if (!out_.empty()) return DoWrite();
    if (phase_ == Phase::kResponding) Next();
  }

  // A response is out: the next request, or a graceful close.
  void Next() {
    if (keep_alive_ && !server_.stopped) {
      if (buffer_.size() == 0) buffer_.shrink_to_fit();  // an idle connection keeps no buffer
      return ReadRequest();
    }
    Linger();
  }

  // A refusal: answered, then the connection is closed (the rest of the
  // request, if any, is never read).
  void Fail(int status, std::string text) { Fail(Plain(status, std::move(text) + "\n")); }
  void Fail(Response r) {
    keep_alive_ = false;
    if (r.status >= 400) Report(r.status);
    phase_ = Phase::kResponding;
    Enqueue(Serialize(r, false), 0);
    DoWrite();
  }

  // Closing a socket with unread input makes the kernel send a reset, which
  // can destroy the answer before the client reads it: stop sending, then
  // read and drop what still comes, for a bounded time and amount.
  void Linger() {
    phase_ = Phase::kLingering;
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    Arm(Deadline::kLinger, Clock::now() + std::chrono::seconds(2));
    Drain(0);
  }
  void Drain(size_t so_far) {
    if (so_far > (1u << 20)) return CloseNow();
    buffer_.consume(buffer_.size());  // what the connection had read is dropped too
    socket_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this(), so_far](error_code ec, size_t n) {
                              if (ec || self->timed_out_ != Deadline::kNone) {
                                return self->CloseNow();
                              }
                              self->buffer_.commit(n);
                              self->Drain(so_far + n);
                            });
  }

  void CloseNow() {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kClosed;
    error_code ignored;
    deadline_.cancel();
    heartbeat_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    if (stream_) {
      auto s = std::move(stream_);
      stream_ = nullptr;
      s->Closed(false);
    }
    auto keep = std::move(self_);  // the last reference may go here
  }

  void Report(int status) { server_.handler.Refused(status, method_, path_, client_); }

  // -------------------------------------------------------------- deadlines
  // One timer: the deadline of whatever the connection waits for now. When
  // it fires it cancels the socket's pending operation, whose handler then
  // finds timed_out_ set. A generation number tells a stale firing apart.
  void Arm(Deadline which, Clock::time_point when) {
    armed_ = which;
    uint64_t gen = ++generation_;
    deadline_.expires_at(when);
    deadline_.async_wait([self = shared_from_this(), gen](error_code ec) {
      if (ec || gen != self->generation_ || self->phase_ == Phase::kClosed) return;
      self->Expired();
    });
  }
  void Disarm() {
    armed_ = Deadline::kNone;
    ++generation_;
    deadline_.cancel();
  }
  void Expired() {
    if (armed_ == Deadline::kIdle && (parser_->got_some() || buffer_.size() > 0)) {
      // The request has begun: its header deadline counts from the start.
      return Arm(Deadline::kHeader, request_start_ + limits_.header_timeout);
    }
    timed_out_ = armed_;
    armed_ = Deadline::kNone;
    error_code ignored;
    socket_.cancel(ignored);
  }

  Server::Impl& server_;
  const Limits& limits_;
  tcp::socket socket_;
  asio::steady_timer deadline_, heartbeat_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  const std::string client_;
  const bool counted_;
  Phase phase_ = Phase::kReading;
  Deadline armed_ = Deadline::kNone, timed_out_ = Deadline::kNone;
  uint64_t generation_ = 0;
  Clock::time_point request_start_, last_write_ = Clock::now();
  Clock::time_point body_start_;
  uint64_t body_received_ = 0;
  int requests_ = 0, version_ = 11;
  bool keep_alive_ = true, head_ = false;
  std::string method_, path_;  // of the current request, for Refused()
  Headers extra_;              // from Screen(), on every response to it
  // Output: queued, and being written.
  std::deque<std::string> out_;
  size_t out_payload_ = 0, wpayload_ = 0;
  std::string wbuf_;
  bool writing_ = false, wend_ = false, end_queued_ = false;
  // The response being streamed.
  std::shared_ptr<StreamImpl> stream_;
  std::shared_ptr<Connection> self_;  // while streaming
  bool stream_ended_ = false, chunked_ = true;
  bool watching_ = false, resume_after_watch_ = false;  // WatchPeer's read is pending
};

bool StreamImpl::Write(std::string bytes) {
  if (!open_ || ended_) return false;
  auto c = conn_.lock();
  if (!c) {
    open_ = false;
    return false;
  }
  unflushed_ += static_cast<int64_t>(bytes.size());
  c->PostStreamWrite(shared_from_this(), std::move(bytes));
  return true;
}

void StreamImpl::End() {
  if (ended_.exchange(true)) return;
  if (auto c = conn_.lock()) c->PostStreamEnd(shared_from_this());
}

// Holds its connection until it is answered: nothing else does while the
// handler works (no I/O is pending then).
class ExchangeImpl final : public Exchange {
 public:
  ExchangeImpl(std::shared_ptr<Connection> conn, Server::Impl& server)
      : conn_(std::move(conn)), server_(server) {}
  // A handler that forgot to answer: the client is not left waiting.
  ~ExchangeImpl() override {
    if (conn_) Reply(Plain(500, "internal error: the request was not answered\n"));
  }
  void Reply(Response r) override {
    std::shared_ptr<Connection> c = Take();
    if (c) c->PostReply(std::move(r));
  }
  std::shared_ptr<Stream> OpenStream(Response head, StreamOptions options) override {
    std::shared_ptr<Connection> c = Take();
    auto s = std::make_shared<StreamImpl>(c, server_, std::move(options));
    if (!c) {
      s->Closed(false);
      return s;
    }
    c->PostOpenStream(s, std::move(head));
    return s;
  }

 private:
  std::shared_ptr<Connection> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(conn_);
  }
  std::mutex mu_;
  std::shared_ptr<Connection> conn_;  // until answered
  Server::Impl& server_;
};

void Connection::Dispatch() {
  phase_ = Phase::kHandling;
  Request req = std::move(parser_->request());
  auto ex = std::make_shared<ExchangeImpl>(shared_from_this(), server_);
  Handler& h = server_.handler;
  if (h.Inline(req)) return h.Handle(std::move(req), std::move(ex));
  server_.workers.Post([&h, req = std::move(req), ex = std::move(ex)]() mutable {
    h.Handle(std::move(req), std::move(ex));
  });
}

// ------------------------------------------------------------------ server

void Server::Impl::Accept() {
  acceptor.async_accept(asio::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
    if (stopped) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of descriptors (or memory): wait a moment instead of spinning.
      accept_retry.expires_after(std::chrono::milliseconds(100));
      accept_retry.async_wait([this](error_code e) {
        if (!e && !stopped) Accept();
      });
      return;
    }
    OnAccepted(std::move(socket));
    Accept();
  });
}

void Server::Impl::OnAccepted(tcp::socket socket) {
  error_code ec;
  tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return;  // gone already
  asio::ip::address addr = peer.address();
  if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
    addr = asio::ip::make_address_v4(asio::ip::v4_mapped, addr.to_v6());
  }
  std::string client = addr.to_string();
  socket.set_option(tcp::no_delay(true), ec);  // events are small: no 40 ms Nagle stalls
  std::shared_ptr<Connection> conn;
  int refuse = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = per_client.find(client);
    if (conns.size() >= limits.max_connections) {
      refuse = 503;
    } else if (it != per_client.end() && it->second >= limits.max_connections_per_client) {
      refuse = 429;
    } else {
      conn = std::make_shared<Connection>(*this, std::move(socket), client, true);
      conns[conn.get()] = conn;
      ++per_client[client];
    }
  }
  if (!refuse) return conn->Start();
  // Telling each refused client why costs a little time; past a bound the
  // rest are just closed.
  if (refusing >= 256) {
    handler.Refused(refuse, "", "", client);
    return;  // the socket closes here
  }
  ++refusing;
  // Not a use after move: the socket was moved above only when it was taken
  // (refuse == 0), and that path has returned.
  // NOLINTNEXTLINE(bugprone-use-after-move)
  conn = std::make_shared<Connection>(*this, std::move(socket), client, false);
  conn->Refuse(refuse, refuse == 503 ? "too many connections\n"
                                     : "too many connections from this address\n");
}

void Server::Impl::Unregister(Connection* c, const std::string& client, bool counted) {
  if (!counted) {
    --refusing;
    return;
  }
  std::lock_guard<std::mutex> lock(mu);
  conns.erase(c);
  auto it = per_client.find(client);
  if (it != per_client.end() && --it->second == 0) per_client.erase(it);
}

Server::Server(Handler& handler, Limits limits) : impl_(std::make_unique<Impl>(handler, limits)) {}

Server::~Server() { Stop(); }

bool Server::Listen(const std::string& host, int port, std::string* error) {
  std::vector<tcp::endpoint> endpoints;
  error_code ec;
  if (host.empty()) {
    endpoints.emplace_back(tcp::v4(), static_cast<uint16_t>(port));
  } else if (auto addr = asio::ip::make_address(host, ec); !ec) {
    endpoints.emplace_back(addr, static_cast<uint16_t>(port));
  } else {
    tcp::resolver resolver(impl_->ioc);
    auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec) {
      *error = host + ": " + ec.message();
      return false;
    }
    for (const auto& r : results) endpoints.push_back(r.endpoint());
  }
  auto& a = impl_->acceptor;
  for (const auto& ep : endpoints) {
    a.close(ec);
    a.open(ep.protocol(), ec);
    if (ec) continue;
    a.set_option(asio::socket_base::reuse_address(true), ec);
    a.bind(ep, ec);
    if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) return true;
  }
  a.close();
  *error = ec ? ec.message() : "no address to listen on";
  return false;
}

void Server::Start() {
  Impl& s = *impl_;
  s.work.emplace(s.ioc.get_executor());
  s.workers.Start(s.limits.worker_threads);
  asio::post(s.ioc, [&s] { s.Accept(); });
  for (int i = 0; i < s.limits.io_threads; ++i) s.io_threads.emplace_back([&s] { s.ioc.run(); });
}

void Server::Post(std::function<void()> fn) { impl_->workers.Post(std::move(fn)); }

void Server::Stop() {
  Impl& s = *impl_;
  if (s.stopped.exchange(true)) return;
  if (s.io_threads.empty()) return;
  asio::post(s.ioc, [&s] {
    error_code ignored;
    s.acceptor.close(ignored);
    s.accept_retry.cancel();
  });
  std::vector<std::shared_ptr<Connection>> all;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    for (auto& [p, w] : s.conns) {
      if (auto c = w.lock()) all.push_back(std::move(c));
    }
  }
  for (auto& c : all) c->Shutdown();
  all.clear();
  s.work.reset();
  auto until = Clock::now() + std::chrono::seconds(2);
  while ((connections() > 0 || s.refusing > 0) && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  s.ioc.stop();
  for (auto& t : s.io_threads) t.join();
  s.io_threads.clear();
  s.workers.Stop();
}

size_t Server::connections() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->conns.size();
}

}  // namespace mcpexec::http
