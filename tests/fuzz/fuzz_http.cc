// HTTP client connections fed arbitrary bytes, through the real server
// (src/transport/http_connection.h: Beast's parser with our limits and the
// connection's handling: headers, bodies, chunked, keep-alive, pipelining,
// refusals) and the real MCP transport on it (src/transport/
// http_transport.h: auth, Origin and Host policy, CORS, streamable HTTP and
// legacy SSE, sessions, probes, metrics), both linked from the library.
//
// What differs from served connections: each socket is one end of a
// socketpair instead of an accepted TCP socket, and everything runs on this
// thread, in an order the harness sets: the I/O, the handlers (the worker
// pool is stopped, so it runs what it is given at once) and the calls'
// answers (the backend releases them once the I/O has settled). Session ids
// come from a counter instead of getrandom() (the transport takes where
// its ids come from): the first session an input
// opens is 32 zeros, the second "0101...01", and so on.
//
// The server's socket has a small send buffer (a client that reads slowly),
// and the client reads only between the server's turns. A handler must
// never block the I/O thread: a turn that takes longer than 5 s aborts with
// the stack of where it waits.
//
// The first byte sets the configuration: bit 0 legacy SSE (else streamable
// HTTP), bit 1 bound beyond loopback, bit 2 an auth token ("s3cret"), bit 3
// allowed origins, bit 6 the client closes its sending side as soon as it
// has sent everything (else once the server has settled: a client that
// waits for its answers); the rest is what the clients send, one connection
// each, separated by "\n--next-connection--\n" (at most 4, open side by
// side, each starting to send once the ones before have settled: an SSE
// stream on one, its POSTs on the next). Checked: nothing
// crashes, throws or hangs, and what comes back is HTTP.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/log.h"
#include "fuzz_backend.h"
#include "transport/http_connection.h"
#include "transport/http_transport.h"

namespace mcpexec {
namespace {

// Session ids from a counter: every byte of the id the session's number.
int g_sessions_made = 0;
std::string CountedSessionId() {
  char hex[3];
  snprintf(hex, sizeof hex, "%02x", g_sessions_made++ & 0xff);
  std::string id;
  for (int i = 0; i < 16; ++i) id += hex;
  return id;
}

constexpr char kClient[] = "127.0.0.1";

Config ConfigFor(uint8_t mode) {
  Config c;
  c.transport = (mode & 1) ? Transport::kSse : Transport::kHttp;
  // A bind beyond loopback, for the policy only: nothing listens (socketpairs).
  c.addr = (mode & 2) ? "192.0.2.1:8080" : "127.0.0.1:8080";
  if (mode & 4) c.auth_token = "s3cret";
  if (mode & 8) c.allowed_origins = "https://app.example, http://localhost:5173";
  // Caps an input can pass: the body (413), sessions, streams, files.
  c.max_request_bytes = 4096;
  c.max_sessions = 3;
  c.max_streams = 2;
  c.max_in_files = 4;
  c.max_in_bytes = 2048;
  return c;
}

// The client's end: sends the input, then shuts its sending side, and reads
// whatever comes back. Non-blocking: Pump() moves what it can.
class Client {
 public:
  Client(int fd, std::string_view in, bool close_early)
      : fd_(fd), in_(in.data()), size_(in.size()), close_early_(close_early) {}
  ~Client() { close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  size_t Pump() {
    size_t moved = 0;
    while (off_ < size_) {
      ssize_t n = send(fd_, in_ + off_, size_ - off_, MSG_NOSIGNAL);
      if (n > 0) {
        off_ += static_cast<size_t>(n);
        moved += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      off_ = size_;  // the server closed: the rest is never sent
    }
    if (off_ == size_ && close_early_) ShutWrite();
    char buf[65536];
    for (;;) {
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;  // nothing yet, or the server is done
      const size_t room = kKeep - std::min(kKeep, received_.size());
      received_.append(buf, std::min(room, static_cast<size_t>(n)));
      moved += static_cast<size_t>(n);
    }
    return moved;
  }
  // The client is done sending (the server reads EOF); false if it was.
  bool ShutWrite() {
    if (shut_) return false;
    shutdown(fd_, SHUT_WR);
    shut_ = true;
    return true;
  }
  const std::string& received() const { return received_; }

 private:
  static constexpr size_t kKeep = 1 << 20;
  const int fd_;
  const char* const in_;
  const size_t size_;
  const bool close_early_;
  size_t off_ = 0;
  bool shut_ = false;
  std::string received_;
};

// Aborts, with the stack of where it waits, if one turn of the I/O thread
// takes longer than 5 s: a handler blocked it (every input is done in well
// under a second).
class TurnWatchdog {
 public:
  TurnWatchdog() {
    struct sigaction sa {};
    sa.sa_handler = [](int) {
      static const char kMsg[] =
          "fuzz_http: one turn of the I/O thread took 5 s: a handler blocks\n";
      (void)!write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
      abort();
    };
    sigaction(SIGUSR2, &sa, nullptr);
    sigevent ev{};
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGUSR2;
    ev._sigev_un._tid = gettid();
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer_) != 0) abort();
  }
  void Arm() { Set(5); }
  void Disarm() { Set(0); }

 private:
  void Set(time_t seconds) {
    itimerspec t{};
    t.it_value.tv_sec = seconds;
    timer_settime(timer_, 0, &t, nullptr);
  }
  timer_t timer_{};
};

TurnWatchdog* g_watchdog = nullptr;

size_t Turn(boost::asio::io_context& ioc) {
  g_watchdog->Arm();
  size_t n = ioc.poll();
  g_watchdog->Disarm();
  return n;
}

// The input's connections: its bytes split at kNextConnection, at most
// kMaxConnections (the last takes the rest).
constexpr std::string_view kNextConnection = "\n--next-connection--\n";
constexpr size_t kMaxConnections = 4;

std::vector<std::string_view> SplitConnections(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> out;
  for (size_t at; out.size() + 1 < kMaxConnections &&
                  (at = rest.find(kNextConnection)) != std::string_view::npos;) {
    out.push_back(rest.substr(0, at));
    rest.remove_prefix(at + kNextConnection.size());
  }
  out.push_back(rest);
  return out;
}

// One client connection: the client's end and the server's.
struct Link {
  std::unique_ptr<Client> client;
  std::weak_ptr<http::Connection> conn;
};

// Opens a connection to the server as Server::Impl::OnAccepted takes one in;
// the server's end gets a small send buffer.
Link Connect(http::Server::Impl& server, std::string_view in, bool close_early) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) abort();
  if (fcntl(sv[1], F_SETFL, O_NONBLOCK) != 0) abort();
  const int sndbuf = 8192;  // the kernel doubles it
  if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) != 0) abort();
  boost::asio::ip::tcp::socket socket(server.ioc);
  boost::system::error_code ec;
  socket.assign(boost::asio::ip::tcp::v4(), sv[0], ec);
  if (ec) abort();
  auto c = std::make_shared<http::Connection>(server, std::move(socket), kClient, true);
  {
    std::lock_guard<std::mutex> lock(server.mu);
    server.conns[c.get()] = c;
    ++server.per_client[kClient];
  }
  c->Start();
  return {std::make_unique<Client>(sv[1], in, close_early), c};
}

// Runs the connections until they are over: the I/O until it settles, then
// the calls it started, again and again; once nothing moves, the next
// client starts sending (so that they take turns in the input's order), and
// after the last the clients close their sending sides (the server reads
// EOF); once nothing moves again the connections are shut as the server's
// Stop() would.
void Drive(http::Server::Impl& server, HttpTransport& transport, fuzz::FuzzBackend& backend,
           std::vector<Link>& links) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  size_t started = 1;
  bool shut = false;
  for (;;) {
    size_t moved = Turn(server.ioc);
    for (size_t i = 0; i < started; ++i) moved += links[i].client->Pump();
    if (moved > 0) continue;
    if (backend.unfinished() > 0 || transport.CallsInFlight() > 0) {
      backend.Release();  // the I/O has settled: the calls accepted so far answer
      if (std::chrono::steady_clock::now() > give_up) {
        fprintf(stderr, "fuzz_http: calls did not end within 20 s\n");
        abort();
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    if (started < links.size()) {
      ++started;
      continue;
    }
    bool closed = false;
    for (Link& l : links) closed |= l.client->ShutWrite();
    if (closed) continue;
    if (shut) return;
    for (Link& l : links) {
      if (auto c = l.conn.lock()) c->Shutdown();
    }
    shut = true;
  }
}

}  // namespace
}  // namespace mcpexec

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mcpexec::log::SetLevel("error");  // the log goes to stderr: only what is wrong
  mcpexec::g_watchdog = new mcpexec::TurnWatchdog();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcpexec;  // NOLINT(google-build-using-namespace)
  if (size < 1) return -1;
  g_sessions_made = 0;
  const Config config = ConfigFor(data[0]);
  fuzz::FuzzBackend backend(config);
  Server mcp_server(backend);
  HttpTransport transport(mcp_server, backend, config, CountedSessionId);
  // The connections' server, declared last: destroyed first, while the
  // transport its callbacks reach still lives (as in HttpTransport itself).
  http::Server::Impl server(transport, LimitsFor(config));
  server.workers.Stop();
  server.work.emplace(server.ioc.get_executor());
  {
    std::vector<Link> links;
    for (std::string_view in : SplitConnections(data + 1, size - 1)) {
      links.push_back(Connect(server, in, (data[0] & 0x40) != 0));
    }
    Drive(server, transport, backend, links);
    for (const Link& l : links) {
      const std::string& got = l.client->received();
      if (!got.empty() && got.rfind("HTTP/1.1 ", 0) != 0) {
        fprintf(stderr, "fuzz_http: the answer is not HTTP: %.80s\n", got.c_str());
        abort();
      }
    }
  }
  server.work.reset();
  Turn(server.ioc);
  return 0;
}
