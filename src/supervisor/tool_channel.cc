#include "supervisor/tool_channel.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

#include "base/bounded_json.h"
#include "base/deadline.h"
#include "base/log.h"
#include "ipc/frame.h"
#include "ipc/tool_frames.h"

namespace mcpexec {

struct ToolChannel::State : std::enable_shared_from_this<State> {
  // What an answering thread does next, in the order the run sent it: a
  // request to answer, a frame ready to write (a refusal), or the end.
  struct Item {
    enum Kind { kRequest, kReply, kEnd } kind;
    nlohmann::json body;
  };

  std::shared_ptr<ToolGateway> gateway;
  UniqueFd fd, stop;
  std::chrono::steady_clock::time_point deadline;
  ToolChannelLimits limits;
  Metrics* metrics = nullptr;
  CallPool* pool = nullptr;
  std::atomic<int64_t> calls{0};
  std::atomic<bool> reading{true};  // fd() gives the descriptor while true
  static constexpr std::chrono::milliseconds kLinger{20};
  std::mutex mu;
  std::condition_variable more;  // an item queued for a lingering thread, or the stop
  std::deque<Item> queue;        // under mu
  int workers = 0;               // pool threads serving the channel (under mu)
  int idle = 0;                  // of them, those lingering for an item (under mu)
  int busy = 0;                  // of them, those answering an item (under mu)
  bool ending = false;           // the end was taken: shut once nothing is busy (under mu)
  bool stopped = false;          // the run ended (under mu)
  bool shut = false;             // the socket is shut both ways (under mu)
  std::mutex write_mu;           // one frame written at a time

  // However the channel ends, the run's end sees EOF: a call it still
  // makes, or an answer it waits for, fails at once instead of hanging.
  void ShutLocked() {
    reading = false;
    queue.clear();
    if (shut) return;
    shut = true;
    shutdown(fd.get(), SHUT_RDWR);
  }

  // Hands an item to an answering thread: a lingering one, else a new one
  // while fewer than max_in_flight serve the channel (else the next one
  // free takes it).
  void Enqueue(Item item) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopped || shut) return;
      queue.push_back(std::move(item));
      // A lingering thread takes it; one more is started while the
      // lingering ones already have an item each (a burst comes in one
      // read, before any of them woke).
      more.notify_one();
      if (static_cast<int>(queue.size()) <= idle ||
          workers >= std::max<int64_t>(1, limits.max_in_flight)) {
        return;
      }
      ++workers;
    }
    // Not tied to the ToolChannel: a call in flight when the run ends
    // finishes by the deadline on its own, holding the state (and the
    // gateway) alive until then; the pool's owner waits for it at shutdown.
    if (pool->Start([s = shared_from_this()] { s->Work(); })) return;
    log::Error("tool_channel_not_served", {{"why", "no thread"}});
    std::lock_guard<std::mutex> lock(mu);
    --workers;
    ShutLocked();
  }

  // A pool thread: answers what is queued until nothing is and nothing
  // more came for kLinger (a run calling tools in a loop keeps its thread
  // from one call to the next; a run that computes holds none). Up to
  // max_in_flight threads answer side by side, each reply under its call's
  // id; the end is taken once every call sent before it is answered.
  void Work() {
    std::unique_lock<std::mutex> lock(mu);
    while (!shut) {
      if (queue.empty() && !stopped) {
        ++idle;
        more.wait_for(lock, kLinger, [&] { return !queue.empty() || stopped || shut; });
        --idle;
      }
      if (queue.empty() || stopped || shut) break;
      Item item = std::move(queue.front());
      queue.pop_front();
      if (item.kind == Item::kEnd) {
        ending = true;
        queue.clear();
        if (busy == 0) ShutLocked();
        break;
      }
      ++busy;
      lock.unlock();
      const bool written =
          WriteFrame(item.kind == Item::kRequest ? Answer(item.body) : std::move(item.body));
      lock.lock();
      --busy;
      if (!written) ShutLocked();  // the run stopped reading, or ended
      if (ending && busy == 0) ShutLocked();
    }
    if (stopped && busy == 0) ShutLocked();
    --workers;
  }

  // Writes a frame by the run's deadline (a run that stops reading holds
  // only this thread, and only until then).
  bool WriteFrame(const nlohmann::json& j) {
    const std::string frame = ipc::ToolFrame(j);
    std::lock_guard<std::mutex> lock(write_mu);
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
    // Counted before it goes out; threads side by side never pass the cap.
    int64_t made = calls.load();
    while (made < limits.max_calls && !calls.compare_exchange_weak(made, made + 1)) {
    }
    if (made >= limits.max_calls) {
      // Counted under its upstream only when that is a configured one: a
      // label never holds what the run chose (Metrics::RecordToolCall).
      if (metrics) metrics->RecordToolCall(server, "refused", 0);
      return refuse("limit", "this call has made its " + std::to_string(limits.max_calls) +
                                 " nested tool calls, the most MCP_EXEC_MAX_TOOL_CALLS allows "
                                 "in one exec call; batch the work into fewer calls, or go on "
                                 "in another exec call");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      --calls;
      return refuse("limit", "the run's timeout has passed; no more tool calls in this run");
    }
    auto args = req.find("arguments");
    ToolAnswer a = gateway->Call(server, req["tool"].get_ref<const std::string&>(),
                                 args == req.end() ? nlohmann::json::object() : *args, deadline,
                                 limits.max_result_bytes);
    if (!a.ok) return refuse("tool", a.error);
    return {{"id", id}, {"ok", true}, {"value", std::move(a.value)}};
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
  state_->pool = &pool;
}

ToolChannel::~ToolChannel() { Stop(); }

int ToolChannel::fd() const { return state_->reading ? state_->fd.get() : -1; }

void ToolChannel::OnReadable() {
  char chunk[65536];
  while (state_->reading) {
    ssize_t n = recv(state_->fd.get(), chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      // The run closed its end (or the socket failed): what it sent before
      // is still answered, then the channel ends.
      state_->reading = false;
      state_->Enqueue({State::Item::kEnd, nullptr});
      return;
    }
    buf_.append(chunk, static_cast<size_t>(n));
    TakeFrames();
  }
}

void ToolChannel::TakeFrames() {
  const ToolChannelLimits& limits = state_->limits;
  const int64_t max_frame = MaxRequestBytes(limits);
  const int64_t max_frames = MaxFrames(limits);
  const int64_t max_bytes = MaxChannelBytes(limits);
  while (state_->reading) {
    if (body_len_ < 0) {
      if (buf_.size() < ipc::kU32Bytes) return;
      const uint32_t n = ipc::LoadU32LE(buf_.data());
      buf_.erase(0, ipc::kU32Bytes);
      if (n > max_frame) {
        return Close("a frame of " + std::to_string(n) + " bytes is more than the " +
                         std::to_string(max_frame) +
                         " a call's arguments may have; the channel is closed",
                     "oversized frame", n);
      }
      // Every frame counts, lists and refused calls too: a run cannot keep
      // the supervisor busy past these bounds.
      if (++frames_ > max_frames || (bytes_read_ += n) > max_bytes) {
        return Close("this run has sent " + std::to_string(frames_) + " frames (" +
                         std::to_string(bytes_read_) + " bytes) on its tool channel, past the " +
                         std::to_string(max_frames) + " frames and " + std::to_string(max_bytes) +
                         " bytes one exec call may send (MCP_EXEC_MAX_TOOL_CALLS calls and " +
                         std::to_string(kExtraFrames) +
                         " more for listing and refusals); the channel is closed",
                     "channel budget spent", n);
      }
      body_len_ = n;
    }
    if (buf_.size() < static_cast<size_t>(body_len_)) return;
    const std::string body = buf_.substr(0, static_cast<size_t>(body_len_));
    buf_.erase(0, static_cast<size_t>(body_len_));
    body_len_ = -1;
    TakeFrame(body);
  }
}

void ToolChannel::TakeFrame(const std::string& body) {
  bounded_json::Parsed parsed = bounded_json::Parse(body);
  if (parsed.too_deep) {
    // Answered under its id when it has one: the call fails, the channel
    // stays.
    const nlohmann::json id = bounded_json::TopLevelId(body);
    if (id.is_number_integer()) {
      if (state_->metrics) state_->metrics->RecordToolFrameRefused("too deep");
      state_->Enqueue({State::Item::kReply,
                       {{"id", id},
                        {"ok", false},
                        {"kind", "refused"},
                        {"error", "the arguments are " + parsed.error}}});
      return;
    }
  }
  nlohmann::json& req = parsed.value;
  if (!parsed.ok() || !req.is_object() || !req.contains("id") || !req["id"].is_number_integer() ||
      !req.contains("op") || !req["op"].is_string()) {
    return Close("a frame that is not a call; the channel is closed", "malformed frame",
                 static_cast<int64_t>(body.size()));
  }
  state_->Enqueue({State::Item::kRequest, std::move(req)});
}

// Ends the channel with one last frame saying why (id null: no call of the
// run's is answered by it), after what the run sent before it.
void ToolChannel::Close(const std::string& why, const char* log_why, int64_t bytes) {
  state_->reading = false;
  if (state_->metrics) state_->metrics->RecordToolFrameRefused(log_why);
  log::Warn("tool_channel", {{"why", log_why}, {"bytes", bytes}, {"frames", frames_}});
  state_->Enqueue(
      {State::Item::kReply, {{"id", nullptr}, {"ok", false}, {"kind", "refused"}, {"error", why}}});
  state_->Enqueue({State::Item::kEnd, nullptr});
}

void ToolChannel::Stop() {
  state_->reading = false;
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->stopped) return;
  state_->stopped = true;
  state_->queue.clear();
  state_->more.notify_all();  // a lingering thread goes now
  uint64_t one = 1;
  (void)!write(state_->stop.get(), &one, sizeof one);  // a write waiting gives up
  // An answering thread shuts the socket once its call is done.
  if (state_->busy == 0) state_->ShutLocked();
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
