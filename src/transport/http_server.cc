#include "transport/http_server.h"

#include <strings.h>

#include <algorithm>

#include "base/log.h"
#include "transport/http_connection.h"

namespace mcpexec::http {

namespace {

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
void WorkerPool::Start(int n) {
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
}

void WorkerPool::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopped_) {
      tasks_.push_back(std::move(fn));
      cv_.notify_one();
      return;
    }
  }
  fn();
}

void WorkerPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void WorkerPool::Loop() {
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
  std::weak_ptr<Connection> evict;
  int refuse = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto now = Clock::now();
    const size_t held = per_client.count(client) ? per_client[client] : 0;
    const size_t waiting = unproven_per_client.count(client) ? unproven_per_client[client] : 0;
    Connection* gives_way = nullptr;
    if (held >= limits.max_connections_per_client) {
      // The address is at its bound: its own oldest connection that has
      // not sent a request gives way (a client reconnecting churns only its
      // own slots); with none, the newcomer is refused.
      gives_way = OldestUnprovenLocked(&client, nullptr);
      if (!gives_way) refuse = 429;
    } else if (waiting >= limits.max_unproven_per_client) {
      // Past its share of silent connections, the address's oldest one that
      // has been silent for the grace gives way; younger ones are a burst
      // still sending its heads.
      const auto before = now - limits.unproven_grace;
      gives_way = OldestUnprovenLocked(&client, &before);
    }
    if (!gives_way && !refuse &&
        (unproven.size() >= MaxUnproven() || conns.size() >= limits.max_connections)) {
      // The server is full, or full of connections with no request yet: the
      // oldest one of the address holding the most of those gives way. A
      // connection that sent its request is never closed for a newcomer.
      std::string most;
      size_t most_n = 0;
      for (const auto& [who, n] : unproven_per_client) {
        if (n > most_n) most = who, most_n = n;
      }
      if (most_n > 0) gives_way = OldestUnprovenLocked(&most, nullptr);
      if (!gives_way && conns.size() >= limits.max_connections) refuse = 503;
    }
    if (gives_way) {
      // No longer waiting from now on: the next newcomer picks another.
      gives_way->proven_ = true;
      ForgetUnprovenLocked(gives_way);
      evict = gives_way->weak_from_this();
    }
    if (!refuse) {
      conn = std::make_shared<Connection>(*this, std::move(socket), client, true);
      conns[conn.get()] = conn;
      ++per_client[client];
      ++unproven_per_client[client];
      unproven.push_back({conn.get(), now});
    }
  }
  if (auto e = evict.lock()) {
    log::Info("http_unproven_evicted", {{"unproven", MaxUnproven()}});
    e->Shutdown();
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
  {
    // Under the lock even for a refused one: Stop waits on `gone` for both
    // counts.
    std::lock_guard<std::mutex> lock(mu);
    if (!counted) {
      --refusing;
    } else {
      conns.erase(c);
      auto it = per_client.find(client);
      if (it != per_client.end() && --it->second == 0) per_client.erase(it);
      if (!c->proven_.exchange(true)) ForgetUnprovenLocked(c);
    }
  }
  gone.notify_all();
}

void Server::Impl::Proven(Connection* c, const std::string& /*client*/) {
  if (c->proven_) return;  // every later request: it only ever turns true
  std::lock_guard<std::mutex> lock(mu);
  if (!c->proven_.exchange(true)) ForgetUnprovenLocked(c);
}

Connection* Server::Impl::OldestUnprovenLocked(const std::string* client,
                                               const Clock::time_point* before) {
  for (const Waiting& w : unproven) {
    if (before && w.since >= *before) break;  // oldest first: the rest are younger
    if (!client || w.conn->client() == *client) return w.conn;
  }
  return nullptr;
}

void Server::Impl::ForgetUnprovenLocked(Connection* c) {
  auto w =
      std::find_if(unproven.begin(), unproven.end(), [c](const Waiting& x) { return x.conn == c; });
  if (w == unproven.end()) return;
  unproven.erase(w);
  auto it = unproven_per_client.find(c->client());
  if (it != unproven_per_client.end() && --it->second == 0) unproven_per_client.erase(it);
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
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.gone.wait_for(lock, std::chrono::seconds(2),
                    [&] { return s.conns.empty() && s.refusing == 0; });
  }
  s.ioc.stop();
  for (auto& t : s.io_threads) t.join();
  s.io_threads.clear();
  // A close the I/O threads left queued (a loaded machine, past the wait):
  // done here, where no other thread runs the connections, so that a
  // streaming connection lets go of itself and its stream's owner hears of
  // the end (its on_close, on the workers still running).
  {
    std::vector<std::shared_ptr<Connection>> left;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      for (auto& [p, w] : s.conns) {
        if (auto c = w.lock()) left.push_back(std::move(c));
      }
    }
    for (auto& c : left) c->CloseAfterStop();
  }
  s.workers.Stop();
}

size_t Server::connections() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->conns.size();
}

}  // namespace mcpexec::http
