#include "transport/http_connection.h"

#include <linux/sockios.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstdio>

namespace mcpexec::http {

namespace {

bool IEquals(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

std::string Trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t") + 1);
  return s;
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
}  // namespace

Connection::~Connection() {
  if (stream_) stream_->Closed(false);
  server_.Unregister(this, client_, counted_);
}

void Connection::Start() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->ReadRequest(); });
}

void Connection::Refuse(int status, std::string text) {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this(), status, text] {
    self->server_.handler.Refused(status, "", "", self->client_);
    self->keep_alive_ = false;
    self->phase_ = Phase::kResponding;
    self->Enqueue(self->Serialize(Plain(status, text), false), 0);
    self->DoWrite();
  });
}

void Connection::Shutdown() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    // An answer being written (a call's, answered as the server drains)
    // goes out first; then the connection closes (Next: no keep-alive).
    if (self->phase_ == Phase::kResponding) {
      self->keep_alive_ = false;
      return;
    }
    self->CloseNow();
  });
}

void Connection::PostReply(Response r) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), r = std::move(r)]() mutable {
    self->OnReply(std::move(r));
  });
}

void Connection::PostAwait(std::function<void()> gone) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), gone = std::move(gone)]() mutable {
    // Answered meanwhile (the reply was posted first): nothing to watch.
    if (self->phase_ != Phase::kHandling || self->watching_) return;
    self->gone_ = std::move(gone);
    self->WatchPeer();
  });
}

void Connection::PostOpenStream(std::shared_ptr<StreamImpl> s, Response head) {
  asio::post(socket_.get_executor(),
             [self = shared_from_this(), s, head = std::move(head)]() mutable {
               self->OnOpenStream(s, std::move(head));
             });
}

void Connection::PostStreamWrite(std::shared_ptr<StreamImpl> s, std::string bytes) {
  asio::post(socket_.get_executor(),
             [self = shared_from_this(), s, bytes = std::move(bytes)]() mutable {
               if (self->stream_ != s || self->stream_ended_) return s->Sent(bytes.size());
               size_t n = bytes.size();
               self->Enqueue(self->chunked_ ? Chunk(bytes) : std::move(bytes), n);
               self->DoWrite();
             });
}

void Connection::PostStreamEnd(std::shared_ptr<StreamImpl> s) {
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

void Connection::ReadRequest() {
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

bool Connection::IsParseError(const error_code& ec) {
  return ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
         ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
}

void Connection::OnHeader(error_code ec) {
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
  if (counted_) server_.Proven(this, client_);

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

void Connection::ArmBodyDeadline() {
  Arm(Deadline::kBody,
      body_start_ + limits_.body_timeout +
          std::chrono::milliseconds(body_received_ * 1000 / limits_.body_min_rate));
}

void Connection::ReadBody() {
  bhttp::async_read_some(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, size_t n) { self->OnBodyPart(ec, n); });
}

void Connection::OnBodyPart(error_code ec, size_t n) {
  if (phase_ == Phase::kClosed) return;
  if (!ec && timed_out_ == Deadline::kNone && !parser_->is_done()) {
    body_received_ += n;
    ArmBodyDeadline();
    return ReadBody();
  }
  OnBody(ec);
}

void Connection::OnBody(error_code ec) {
  Disarm();
  if (phase_ == Phase::kClosed) return;
  if (timed_out_ != Deadline::kNone) return OnTimeout();
  if (ec == bhttp::error::body_limit) return TooLarge();
  if (ec) return IsParseError(ec) ? Fail(400, "malformed request body") : CloseNow();
  Dispatch();
}

void Connection::TooLarge() {
  Fail(413, "request body too large (limit " + std::to_string(limits_.max_body_bytes) + " bytes)");
}

void Connection::OnTimeout() {
  Deadline which = timed_out_;
  timed_out_ = Deadline::kNone;
  if (which == Deadline::kHeader) return Fail(408, "the request header took too long");
  if (which == Deadline::kBody) return Fail(408, "the request body took too long");
  // Idle between requests, a write that made no progress, the end of a
  // lingering close: nothing to say.
  CloseNow();
}

void Connection::OnReply(Response r) {
  if (phase_ != Phase::kHandling) return;
  gone_ = nullptr;  // answered: the client's leaving is no news to anyone now
  if (r.status >= 400) Report(r.status);
  phase_ = Phase::kResponding;
  Enqueue(Serialize(r, false), 0);
  DoWrite();
}

void Connection::OnOpenStream(std::shared_ptr<StreamImpl> s, Response head) {
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
  gone_ = nullptr;  // the stream's on_close says it from now on
  if (!watching_) WatchPeer();
}

void Connection::WatchPeer() {
  watching_ = true;
  socket_.async_read_some(
      buffer_.prepare(4096),
      [self = shared_from_this()](error_code ec, size_t n) { self->OnPeerRead(ec, n); });
}

void Connection::OnPeerRead(error_code ec, size_t n) {
  watching_ = false;
  if (phase_ == Phase::kClosed) return;
  if (!ec) buffer_.commit(n);
  if (resume_after_watch_) {
    resume_after_watch_ = false;
    return Next();  // the response ended while the watch was pending
  }
  if (ec && ec != asio::error::operation_aborted) {
    // The client is gone; an answer it awaited is no longer wanted.
    if (auto gone = std::move(gone_)) {
      gone_ = nullptr;
      server_.workers.Post(std::move(gone));
    }
    CloseNow();
  }
  // Bytes arrived (a pipelined request): kept for after the response; a
  // stream's heartbeat is the watch from then on.
}

void Connection::Heartbeat() {
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

std::string Connection::Serialize(const Response& r, bool stream) const {
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

void Connection::Enqueue(std::string bytes, size_t payload) {
  out_.push_back(std::move(bytes));
  out_payload_ += payload;
}

void Connection::DoWrite() {
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

void Connection::OnWritten(error_code ec) {
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
  if (phase_ == Phase::kResponding) {
    if (watching_) {
      // An awaited answer is out: the next read waits for the watch's.
      resume_after_watch_ = true;
      error_code ignored;
      socket_.cancel(ignored);
      return;
    }
    Next();
  }
}

void Connection::Next() {
  if (keep_alive_ && !server_.stopped) {
    if (buffer_.size() == 0) buffer_.shrink_to_fit();  // an idle connection keeps no buffer
    return ReadRequest();
  }
  Linger();
}

void Connection::Fail(int status, std::string text) { Fail(Plain(status, std::move(text) + "\n")); }

void Connection::Fail(Response r) {
  keep_alive_ = false;
  if (r.status >= 400) Report(r.status);
  phase_ = Phase::kResponding;
  Enqueue(Serialize(r, false), 0);
  DoWrite();
}

void Connection::Linger() {
  phase_ = Phase::kLingering;
  error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);
  Arm(Deadline::kLinger, Clock::now() + std::chrono::seconds(2));
  Drain(0);
}

void Connection::Drain(size_t so_far) {
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

void Connection::CloseNow() {
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

void Connection::Report(int status) { server_.handler.Refused(status, method_, path_, client_); }

void Connection::Arm(Deadline which, Clock::time_point when) {
  armed_ = which;
  uint64_t gen = ++generation_;
  deadline_.expires_at(when);
  deadline_.async_wait([self = shared_from_this(), gen](error_code ec) {
    if (ec || gen != self->generation_ || self->phase_ == Phase::kClosed) return;
    self->Expired();
  });
}

void Connection::Disarm() {
  armed_ = Deadline::kNone;
  ++generation_;
  deadline_.cancel();
}

void Connection::Expired() {
  if (armed_ == Deadline::kIdle && (parser_->got_some() || buffer_.size() > 0)) {
    // The request has begun: its header deadline counts from the start.
    return Arm(Deadline::kHeader, request_start_ + limits_.header_timeout);
  }
  timed_out_ = armed_;
  armed_ = Deadline::kNone;
  error_code ignored;
  socket_.cancel(ignored);
}

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
  void Await(std::function<void()> gone) override {
    std::shared_ptr<Connection> c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      c = conn_;
    }
    if (c) c->PostAwait(std::move(gone));
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

}  // namespace mcpexec::http
