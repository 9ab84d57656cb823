// A run's way to other MCP servers' tools (code mode): one end of a socket
// pair the supervisor made for this run or cell. The run's I/O loop polls
// fd() with its pipes and calls OnReadable when the run wrote; the frames
// are taken apart there, and the calls are answered on threads of the
// server's call pool, up to max_in_flight side by side, taken in the order
// the run sent them and each answered under its id (a channel holds its
// threads only while they answer, and for a few milliseconds after, in
// case the run's next call follows at once).
// The frames: ipc/tool_frames.h.
// A frame that is not JSON of that shape, or longer than the bound, ends the
// channel (the run's further calls fail): a hostile run harms only itself.
// A frame nested deeper than bounded_json's bound is refused under its id
// before any value is built. Every frame counts against the channel's
// budget (MaxFrames frames, MaxChannelBytes bytes), lists and refusals too;
// past it the channel ends.
// The checks that matter (allowed tool, arguments, result size) are the
// gateway's; the count per run and the run's deadline are held here.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/call_pool.h"
#include "base/metrics.h"
#include "base/unique_fd.h"
#include "model/tool_gateway.h"

namespace mcpexec {

struct ToolChannelLimits {
  int64_t max_calls = 100;
  int64_t max_result_bytes = 1048576;
  int64_t max_in_flight = 8;  // calls answered side by side
};

class ToolChannel {
 public:
  // Serves fd (the supervisor's end) until Stop() or the run closes its
  // end; the calls are answered on threads of `pool`. With no thread to be
  // had (the process limit) the channel is closed: the run's calls fail, the
  // run goes on.
  ToolChannel(std::shared_ptr<ToolGateway> gateway, UniqueFd fd,
              std::chrono::steady_clock::time_point deadline, ToolChannelLimits limits,
              Metrics* metrics, CallPool& pool);
  ~ToolChannel();
  ToolChannel(const ToolChannel&) = delete;
  ToolChannel& operator=(const ToolChannel&) = delete;

  // What the run's loop polls for POLLIN: the channel's descriptor while it
  // reads frames, -1 once it reads no more (ended, stopped).
  int fd() const;
  // The descriptor was readable (or hung up): reads what the run wrote and
  // hands each whole frame on. Never blocks. The run's loop thread only.
  void OnReadable();
  // The run has ended: no more frames are read, none queued is answered. A
  // call still in flight finishes on its own (by the run's deadline) without
  // holding the result. The run's loop thread only.
  void Stop();
  // Calls the run made (each one past the first max_calls is refused and not
  // counted).
  int64_t calls() const;

  // The largest frame a run may send: the arguments of one call and a little.
  static int64_t MaxRequestBytes(const ToolChannelLimits& l);
  // Frames beyond max_calls a run may send (lists, calls refused).
  static constexpr int64_t kExtraFrames = 64;
  // What one run or cell may send on its channel in all: max_calls +
  // kExtraFrames frames, and this many bytes.
  static int64_t MaxFrames(const ToolChannelLimits& l);
  static int64_t MaxChannelBytes(const ToolChannelLimits& l);

 private:
  struct State;
  void TakeFrames();
  void TakeFrame(const std::string& body);
  void Close(const std::string& why, const char* log_why, int64_t bytes);
  std::shared_ptr<State> state_;
  // The loop thread's: the bytes of a frame not yet whole, the length of
  // the frame whose body is awaited (-1: a head is), what was counted.
  std::string buf_;
  int64_t body_len_ = -1;
  int64_t frames_ = 0, bytes_read_ = 0;
};

}  // namespace mcpexec
