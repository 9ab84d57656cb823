// A small HTTP/1.1 server on Boost.Beast and Asio, built for hostile
// clients: a few I/O threads multiplex every connection (an idle or slow
// client costs a socket and a buffer, never a thread), and every limit is
// enforced while reading: header size and field count (431), body size,
// chunked bodies included (413), a whole-header deadline however slowly the
// bytes trickle in and a body that must keep a minimum rate (408), and
// connections in total (503)
// and per client address (429). Request bodies are never decoded: a
// Content-Encoding other than identity is refused (415).
//
// The application sees complete requests. It screens each one after its
// header, before a byte of the body is read, and answers either with one
// response or with a stream (chunked transfer encoding) that it may write
// from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mcpexec::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Limits {
  uint32_t max_header_bytes = 32 * 1024;  // request line and every field, CRLFs included
  uint32_t max_header_fields = 100;
  uint64_t max_body_bytes = 1 << 20;  // after chunked decoding
  size_t max_connections = 1024;
  size_t max_connections_per_client = 256;
  // Connections that have not yet sent a whole request head ("unproven":
  // silent, or trickling their header) would hold a slot each until
  // header_timeout. Past max_unproven_per_client of an address's, a
  // newcomer from it displaces its oldest that has been silent for
  // unproven_grace (a client opening many connections at once, an SDK's
  // pool or a burst of streams, has them all unproven for a moment and
  // loses none). All together at most max_unproven (0: a quarter of
  // max_connections, at least 8): past that, or with every slot taken, the
  // oldest of the address holding the most gives way at once. Reconnecting
  // silent sockets cannot keep anyone else out.
  size_t max_unproven_per_client = 8;
  size_t max_unproven = 0;
  std::chrono::milliseconds unproven_grace{2000};
  // A kept-alive connection with no byte of a next request for this long is
  // closed without a word.
  std::chrono::milliseconds idle_timeout{5000};
  // From the first moment the server waits for a request to its last header
  // byte.
  std::chrono::milliseconds header_timeout{10000};
  // The body: this, plus 1/body_min_rate of a second for every byte received
  // (a body that keeps the rate never runs out; one that stalls does).
  std::chrono::milliseconds body_timeout{10000};
  uint64_t body_min_rate = uint64_t{256} * 1024;  // bytes per second
  // One write may make no progress for this long before the client is
  // considered gone.
  std::chrono::milliseconds write_timeout{30000};
  int keep_alive_max = 1000;  // requests per connection
  int io_threads = 2;
  int worker_threads = 4;
};

struct Request {
  std::string method;  // as sent, e.g. "POST"
  std::string target;  // as sent, e.g. "/message?sessionId=..."
  std::string path;    // the target without its query
  std::string query;
  int version = 11;  // 10 or 11
  Headers headers;   // in arrival order
  std::string body;
  std::string client;  // the peer's IP address

  // The first field of that name (case-insensitive), or "".
  std::string Header(const std::string& name) const;
  bool HasHeader(const std::string& name) const;
  // A query parameter, percent-decoded, or "".
  std::string Param(const std::string& name) const;
};

struct Response {
  int status = 200;
  std::string content_type;  // none if empty
  std::string body;
  Headers headers;
};

// Response bodies written piece by piece: server-sent events. Thread-safe;
// every call returns at once (the bytes are queued for the I/O thread).
class Stream {
 public:
  virtual ~Stream() = default;
  // False if the connection is already gone (the bytes are dropped).
  virtual bool Write(std::string bytes) = 0;
  // Ends the body (after everything written before). Idempotent.
  virtual void End() = 0;
  // Everything written so far has reached the socket (or never will).
  virtual bool Flushed() const = 0;
  virtual bool Open() const = 0;
};

struct StreamOptions {
  // Written whenever nothing else was for `heartbeat_every`: keeps proxies
  // from timing out and finds a client that left (the write fails).
  std::chrono::milliseconds heartbeat_every{0};  // 0: none
  std::string heartbeat;
  // Called once, from a worker thread: completed is true when End() was
  // written out, false when the connection went first.
  std::function<void(bool completed)> on_close;
  // Called from an I/O thread each time everything written so far has
  // reached the socket (or was dropped); cheap and non-blocking.
  std::function<void()> on_flushed;
};

// One request's way back. Exactly one of Reply or OpenStream; a handler
// that drops it without either answers 500.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual void Reply(Response response) = 0;
  // head: status and headers; its body, if any, is the stream's first bytes.
  virtual std::shared_ptr<Stream> OpenStream(Response head, StreamOptions options) = 0;
  // The answer comes later (Reply, from any thread): until then the
  // connection watches the client, and `gone` runs (on a worker) if it
  // leaves first; a Reply after that goes nowhere.
  virtual void Await(std::function<void()> gone) = 0;
};

class Handler {
 public:
  virtual ~Handler() = default;
  // Runs on an I/O thread as soon as the header is in, before the body is
  // read: a response refuses the request (its body is never read). May add
  // headers to *extra, which go on every response to this request. Must not
  // block.
  virtual std::optional<Response> Screen(const Request& request, Headers* extra) = 0;
  // True if the request, once screened, is routed to something that reads a
  // body. A request that announces a body otherwise is handled without it
  // (never a byte of it read) and its connection closed after the answer.
  virtual bool TakesBody(const Request& request) = 0;
  // True if Handle may run on the I/O thread itself (quick answers that must
  // not wait behind the workers: health probes); otherwise it runs on a
  // worker.
  virtual bool Inline(const Request& request) = 0;
  virtual void Handle(Request request, std::shared_ptr<Exchange> exchange) = 0;
  // Every response with status >= 400, including the server's own refusals
  // (then method and path may be empty: nothing of the request was read).
  virtual void Refused(int status, const std::string& method, const std::string& path,
                       const std::string& client) = 0;
};

class Server {
 public:
  Server(Handler& handler, Limits limits);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens on host:port ("" = every IPv4 interface). On failure
  // returns false with *error set.
  bool Listen(const std::string& host, int port, std::string* error);
  // Serves on its own threads until Stop().
  void Start();
  // Runs fn on a worker thread.
  void Post(std::function<void()> fn);
  // Stops accepting, closes every connection, joins the threads.
  void Stop();
  size_t connections() const;

  struct Impl;  // in http_connection.h, where the connections reach it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace mcpexec::http
