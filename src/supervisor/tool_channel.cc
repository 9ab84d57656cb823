#include "supervisor/tool_channel.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/bounded_json.h"
#include "base/log.h"
#include "ipc/frame.h"
#include "ipc/tool_frames.h"

namespace mcpexec {

namespace {

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
  int64_t frames = 0, bytes_read = 0;  // the reading thread's own
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
    const std::string frame = ipc::ToolFrame(j);
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
    const std::string& op = req["op"].get_ref<const std::string&>();
    if (op == "list") return {{"id", id}, {"ok", true}, {"value", gateway->Catalog()}};
    if (op != "call") return refuse("refused", "unknown op (\"list\" or \"call\")");
    if (!req.contains("server") || !req["server"].is_string() || !req.contains("tool") ||
        !req["tool"].is_string()) {
      return refuse("refused", "a call needs \"server\" and \"tool\" as strings");
    }
    const std::string& server = req["server"].get_ref<const std::string&>();
    if (calls.load() >= limits.max_calls) {
      // Counted under its upstream only when that is a configured one: a
      // label never holds what the run chose (Metrics::RecordToolCall).
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
    auto args = req.find("arguments");
    ToolAnswer a = gateway->Call(server, req["tool"].get_ref<const std::string&>(),
                                 args == req.end() ? nlohmann::json::object() : *args, deadline,
                                 limits.max_result_bytes);
    if (!a.ok) return refuse("tool", a.error);
    return {{"id", id}, {"ok", true}, {"value", std::move(a.value)}};
  }

  // Ends the channel with one last frame saying why (id null: no call of
  // the run's is answered by it).
  void Close(const std::string& why, const char* log_why, int64_t bytes) {
    WriteFrame({{"id", nullptr}, {"ok", false}, {"kind", "refused"}, {"error", why}});
    if (metrics) metrics->RecordToolFrameRefused(log_why);
    log::Warn("tool_channel", {{"why", log_why}, {"bytes", bytes}, {"frames", frames}});
  }

  void Serve() {
    const int64_t max_frame = ToolChannel::MaxRequestBytes(limits);
    const int64_t max_frames = ToolChannel::MaxFrames(limits);
    const int64_t max_bytes = ToolChannel::MaxChannelBytes(limits);
    for (;;) {
      char head[ipc::kU32Bytes];
      if (!ReadFull(head, sizeof head)) return;
      const uint32_t n = ipc::LoadU32LE(head);
      if (n > max_frame) {
        return Close("a frame of " + std::to_string(n) + " bytes is more than the " +
                         std::to_string(max_frame) +
                         " a call's arguments may have; the channel is closed",
                     "oversized frame", n);
      }
      // Every frame counts, lists and refused calls too: a run cannot keep
      // the supervisor busy past these bounds.
      if (++frames > max_frames || (bytes_read += n) > max_bytes) {
        return Close("this run has sent " + std::to_string(frames) + " frames (" +
                         std::to_string(bytes_read) + " bytes) on its tool channel, past the " +
                         std::to_string(max_frames) + " frames and " + std::to_string(max_bytes) +
                         " bytes one exec call may send (MCP_EXEC_MAX_TOOL_CALLS calls and " +
                         std::to_string(ToolChannel::kExtraFrames) +
                         " more for listing and refusals); the channel is closed",
                     "channel budget spent", n);
      }
      std::string body(n, '\0');
      if (!ReadFull(body.data(), n)) return;
      bounded_json::Parsed parsed = bounded_json::Parse(body);
      if (parsed.too_deep) {
        // Answered under its id when it has one: the call fails, the
        // channel stays.
        const nlohmann::json id = bounded_json::TopLevelId(body);
        if (id.is_number_integer()) {
          if (metrics) metrics->RecordToolFrameRefused("too deep");
          if (!WriteFrame({{"id", id},
                           {"ok", false},
                           {"kind", "refused"},
                           {"error", "the arguments are " + parsed.error}})) {
            return;
          }
          continue;
        }
      }
      const nlohmann::json& req = parsed.value;
      if (!parsed.ok() || !req.is_object() || !req.contains("id") ||
          !req["id"].is_number_integer() || !req.contains("op") || !req["op"].is_string()) {
        return Close("a frame that is not a call; the channel is closed", "malformed frame", n);
      }
      if (!WriteFrame(Answer(req))) return;
    }
  }
};

ToolChannel::ToolChannel(std::shared_ptr<ToolGateway> gateway, UniqueFd fd,
                         std::chrono::steady_clock::time_point deadline, ToolChannelLimits limits,
                         Metrics* metrics, CallPool& pool)
    : state_(std::make_shared<State>()) {
  state_->gateway = std::move(gateway);
  state_->fd = std::move(fd);
  state_->stop.Reset(eventfd(0, EFD_CLOEXEC));
  state_->deadline = deadline;
  state_->limits = limits;
  state_->metrics = metrics;
  // Not tied to this object: a call in flight when the run ends finishes by
  // the deadline on its own, holding the state (and the gateway) alive
  // until then; the pool's owner waits for it at shutdown.
  const bool started = pool.Start([s = state_] {
    s->Serve();
    // However it ended, the run's end sees EOF: a call it still makes, or
    // an answer it waits for, fails at once instead of hanging.
    shutdown(s->fd.get(), SHUT_RDWR);
  });
  if (!started) {
    log::Error("tool_channel_not_served", {{"why", "no thread"}});
    shutdown(state_->fd.get(), SHUT_RDWR);
  }
}

ToolChannel::~ToolChannel() { Stop(); }

void ToolChannel::Stop() {
  if (state_->stopped.exchange(true)) return;
  uint64_t one = 1;
  (void)!write(state_->stop.get(), &one, sizeof one);
}

int64_t ToolChannel::calls() const { return state_->calls.load(); }

int64_t ToolChannel::MaxRequestBytes(const ToolChannelLimits& l) {
  return std::max<int64_t>(l.max_result_bytes, 65536) + 4096;
}

int64_t ToolChannel::MaxFrames(const ToolChannelLimits& l) { return l.max_calls + kExtraFrames; }

int64_t ToolChannel::MaxChannelBytes(const ToolChannelLimits& l) {
  return std::max<int64_t>(int64_t{64} << 20, 4 * MaxRequestBytes(l));
}

}  // namespace mcpexec
