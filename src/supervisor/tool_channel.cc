#include "supervisor/tool_channel.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/log.h"

namespace mcpexec {

namespace {

std::atomic<int> g_live_threads{0};

int MillisUntil(std::chrono::steady_clock::time_point t) {
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t - std::chrono::steady_clock::now())
          .count();
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(ms, 1 << 30)));
}

}  // namespace

struct ToolChannel::State {
  std::shared_ptr<ToolGateway> gateway;
  UniqueFd fd, stop;
  std::chrono::steady_clock::time_point deadline;
  ToolChannelLimits limits;
  Metrics* metrics = nullptr;
  std::atomic<int64_t> calls{0};
  std::atomic<bool> stopped{false};

  // Reads exactly n bytes, or false (EOF, error, stop).
  bool ReadFull(char* p, size_t n) {
    while (n > 0) {
      pollfd pf[2] = {{fd.get(), POLLIN, 0}, {stop.get(), POLLIN, 0}};
      if (poll(pf, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      if (pf[1].revents) return false;
      ssize_t got = read(fd.get(), p, n);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) return false;
      p += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  }

  // Writes a frame by the run's deadline (a run that stops reading holds
  // only this thread, and only until then).
  bool WriteFrame(const nlohmann::json& j) {
    std::string body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const uint32_t n = static_cast<uint32_t>(body.size());
    std::string frame(4, '\0');
    for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
    frame += body;
    size_t done = 0;
    const auto until =
        std::max(deadline, std::chrono::steady_clock::now()) + std::chrono::seconds(1);
    while (done < frame.size()) {
      ssize_t w =
          send(fd.get(), frame.data() + done, frame.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        done += static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno != EAGAIN) return false;
      pollfd pf[2] = {{fd.get(), POLLOUT, 0}, {stop.get(), POLLIN, 0}};
      int ms = MillisUntil(until);
      if (ms == 0 || poll(pf, 2, ms) <= 0 || pf[1].revents) return false;
    }
    return true;
  }

  nlohmann::json Answer(const nlohmann::json& req) {
    const nlohmann::json id = req["id"];
    auto refuse = [&](const std::string& kind, const std::string& error) {
      return nlohmann::json{{"id", id}, {"ok", false}, {"kind", kind}, {"error", error}};
    };
    const std::string op = req["op"].get<std::string>();
    if (op == "list") return {{"id", id}, {"ok", true}, {"value", gateway->Catalog()}};
    if (op != "call") return refuse("refused", "unknown op '" + op + "'");
    if (!req.contains("server") || !req["server"].is_string() || !req.contains("tool") ||
        !req["tool"].is_string()) {
      return refuse("refused", "a call needs \"server\" and \"tool\" as strings");
    }
    const std::string server = req["server"].get<std::string>();
    if (calls.load() >= limits.max_calls) {
      if (metrics) metrics->RecordToolCall(server, "refused", 0);
      return refuse("limit", "this call has made its " + std::to_string(limits.max_calls) +
                                 " nested tool calls, the most MCP_EXEC_MAX_TOOL_CALLS allows "
                                 "in one exec call; batch the work into fewer calls, or go on "
                                 "in another exec call");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return refuse("limit", "the run's timeout has passed; no more tool calls in this run");
    }
    ++calls;
    ToolAnswer a = gateway->Call(server, req["tool"].get<std::string>(),
                                 req.value("arguments", nlohmann::json::object()), deadline,
                                 limits.max_result_bytes);
    if (!a.ok) return refuse("tool", a.error);
    return {{"id", id}, {"ok", true}, {"value", std::move(a.value)}};
  }

  void Serve() {
    const int64_t max_frame = ToolChannel::MaxRequestBytes(limits);
    for (;;) {
      unsigned char head[4];
      if (!ReadFull(reinterpret_cast<char*>(head), 4)) return;
      const uint32_t n = head[0] | (head[1] << 8) | (head[2] << 16) | (uint32_t{head[3]} << 24);
      if (n > max_frame) {
        WriteFrame({{"id", nullptr},
                    {"ok", false},
                    {"kind", "refused"},
                    {"error", "a frame of " + std::to_string(n) + " bytes is more than the " +
                                  std::to_string(max_frame) +
                                  " a call's arguments may have; the channel is closed"}});
        log::Warn("tool_channel", {{"why", "oversized frame"}, {"bytes", n}});
        return;
      }
      std::string body(n, '\0');
      if (!ReadFull(body.data(), n)) return;
      nlohmann::json req = nlohmann::json::parse(body, nullptr, false);
      if (req.is_discarded() || !req.is_object() || !req.contains("id") ||
          !req["id"].is_number_integer() || !req.contains("op") || !req["op"].is_string()) {
        WriteFrame({{"id", nullptr},
                    {"ok", false},
                    {"kind", "refused"},
                    {"error", "a frame that is not a call; the channel is closed"}});
        log::Warn("tool_channel", {{"why", "malformed frame"}, {"bytes", n}});
        return;
      }
      if (!WriteFrame(Answer(req))) return;
    }
  }
};

ToolChannel::ToolChannel(std::shared_ptr<ToolGateway> gateway, UniqueFd fd,
                         std::chrono::steady_clock::time_point deadline, ToolChannelLimits limits,
                         Metrics* metrics)
    : state_(std::make_shared<State>()) {
  state_->gateway = std::move(gateway);
  state_->fd = std::move(fd);
  state_->stop.Reset(eventfd(0, EFD_CLOEXEC));
  state_->deadline = deadline;
  state_->limits = limits;
  state_->metrics = metrics;
  // Detached: a call in flight when the run ends finishes by the deadline
  // on its own, holding the state (and the gateway) alive until then.
  ++g_live_threads;
  std::thread([s = state_] {
    s->Serve();
    // However it ended, the run's end sees EOF: a call it still makes, or
    // an answer it waits for, fails at once instead of hanging.
    shutdown(s->fd.get(), SHUT_RDWR);
    --g_live_threads;
  }).detach();
}

ToolChannel::~ToolChannel() { Stop(); }

void ToolChannel::Stop() {
  if (state_->stopped.exchange(true)) return;
  uint64_t one = 1;
  (void)!write(state_->stop.get(), &one, sizeof one);
}

bool ToolChannel::WaitAllEnded(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (g_live_threads.load() > 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

int64_t ToolChannel::calls() const { return state_->calls.load(); }

int64_t ToolChannel::MaxRequestBytes(const ToolChannelLimits& l) {
  return std::max<int64_t>(l.max_result_bytes, 65536) + 4096;
}

}  // namespace mcpexec
