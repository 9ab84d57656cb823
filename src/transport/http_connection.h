// The HTTP server's insides (transport/http_server.h is the interface):
// the request parser, the worker pool, the server's state and one client
// connection with its streamed response. Internal to the server and its
// fuzz target, which drives connections over socketpairs.
#pragma once

// clang-format off: Boost.Asio 1.74's awaitable.hpp uses std::exchange
// without including <utility>.
#include <utility>
// clang-format on
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "transport/http_server.h"

namespace mcpexec::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using beast::error_code;

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
  void Start(int n);
  // After Stop(): runs fn on the caller's thread, so that no callback is lost.
  void Post(std::function<void()> fn);
  // Runs what is queued, then joins.
  void Stop();

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  bool stopped_ = false;
};

class Connection;

struct Server::Impl {
  Impl(Handler& h, Limits l) : handler(h), limits(l) {}

  void Accept();
  void OnAccepted(tcp::socket socket);
  void Unregister(Connection* c, const std::string& client, bool counted);
  // A connection's first request head is in: it no longer counts as
  // unproven.
  void Proven(Connection* c, const std::string& client);
  // `c` no longer waits for its first request head (it sent one, it is
  // gone, or it was chosen to give way).
  void ForgetUnprovenLocked(Connection* c);
  // The oldest connection still without a request, of `client` if given,
  // waiting since before `before` if given; nullptr when there is none.
  Connection* OldestUnprovenLocked(const std::string* client, const Clock::time_point* before);
  size_t MaxUnproven() const {
    return limits.max_unproven ? limits.max_unproven
                               : std::max<size_t>(8, limits.max_connections / 4);
  }

  Handler& handler;
  const Limits limits;
  mutable std::mutex mu;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> conns;  // within the limits
  std::map<std::string, size_t> per_client;
  // Connections with no request head yet: per address, and oldest first
  // with the time each came. Plain pointers: an entry leaves (under mu)
  // when its connection proves itself or unregisters in its destructor, so
  // every entry is alive while mu is held, and no strong reference is made
  // or dropped under mu (dropping the last one there would run the
  // destructor, which takes mu).
  struct Waiting {
    Connection* conn;
    Clock::time_point since;
  };
  std::map<std::string, size_t> unproven_per_client;
  std::deque<Waiting> unproven;
  std::atomic<int> refusing{0};  // connections being told 429 or 503
  std::condition_variable gone;  // a connection ended (Unregister), under mu
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
  void Sent(size_t n) {
    if ((unflushed_ -= static_cast<int64_t>(n)) <= 0 && options_.on_flushed) {
      options_.on_flushed();
    }
  }
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
  ~Connection();

  void Start();
  // Over a connection limit: told so at once, then closed.
  void Refuse(int status, std::string text);
  // The server stops: closed at once, or once the answer being written is
  // out.
  void Shutdown();
  // After the I/O threads have stopped (Server::Stop): closes at once, on
  // the caller's thread.
  void CloseAfterStop() { CloseNow(); }

  void PostReply(Response r);
  // The handler answers later (Exchange::Await): watch the client meanwhile.
  void PostAwait(std::function<void()> gone);
  void PostOpenStream(std::shared_ptr<StreamImpl> s, Response head);
  void PostStreamWrite(std::shared_ptr<StreamImpl> s, std::string bytes);
  void PostStreamEnd(std::shared_ptr<StreamImpl> s);

 private:
  enum class Phase { kReading, kHandling, kResponding, kStreaming, kLingering, kClosed };
  enum class Deadline { kNone, kIdle, kHeader, kBody, kWrite, kLinger };

  // ---------------------------------------------------------------- reading
  void ReadRequest();

  static bool IsParseError(const error_code& ec);

  void OnHeader(error_code ec);

  // The body must keep moving: every byte received buys 1/body_min_rate of a
  // second beyond body_timeout. A body sent at the minimum rate or faster
  // never runs out; one that stalls, or trickles, is cut within
  // body_timeout / (1 - its rate / the minimum), whatever length it announced.
  void ArmBodyDeadline();
  void ReadBody();
  void OnBodyPart(error_code ec, size_t n);

  void OnBody(error_code ec);

  void TooLarge();

  void Dispatch();

  void OnTimeout();

  // --------------------------------------------------------------- answering
  void OnReply(Response r);

  void OnOpenStream(std::shared_ptr<StreamImpl> s, Response head);

  // While a response streams, or the handler awaits its answer
  // (Exchange::Await), nothing else reads the socket: a read kept
  // pending sees at once that the client went away (EOF, reset), which
  // otherwise only a failing heartbeat would show, up to two heartbeats
  // later. What such a stream holds (an SSE session, its Python sessions)
  // then ends at once, and an awaited answer's call is told (gone_). Bytes
  // that do arrive (a pipelined request) are kept for after the response,
  // and a stream's heartbeat is the watch from then on.
  void WatchPeer();
  void OnPeerRead(error_code ec, size_t n);

  void Heartbeat();

  std::string Serialize(const Response& r, bool stream) const;

  // payload: how many of the bytes are a stream's Write (Flushed() waits
  // for them).
  void Enqueue(std::string bytes, size_t payload);

  void DoWrite();

  void OnWritten(error_code ec);

  // A response is out: the next request, or a graceful close.
  void Next();

  // A refusal: answered, then the connection is closed (the rest of the
  // request, if any, is never read).
  void Fail(int status, std::string text);
  void Fail(Response r);

  // Closing a socket with unread input makes the kernel send a reset, which
  // can destroy the answer before the client reads it: stop sending, then
  // read and drop what still comes, for a bounded time and amount.
  void Linger();
  void Drain(size_t so_far);

  void CloseNow();

  void Report(int status);

  // -------------------------------------------------------------- deadlines
  // One timer: the deadline of whatever the connection waits for now. When
  // it fires it cancels the socket's pending operation, whose handler then
  // finds timed_out_ set. A generation number tells a stale firing apart.
  void Arm(Deadline which, Clock::time_point when);
  void Disarm();
  void Expired();

  Server::Impl& server_;
  const Limits& limits_;
  tcp::socket socket_;
  asio::steady_timer deadline_, heartbeat_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  const std::string client_;
  const bool counted_;

 public:
  std::atomic<bool> proven_{false};  // its first request head came (Server::Impl::Proven)
  const std::string& client() const { return client_; }

 private:
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
  std::function<void()> gone_;  // an awaited answer's: the client left first
};

}  // namespace mcpexec::http
