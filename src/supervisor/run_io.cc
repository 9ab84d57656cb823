#include "supervisor/run_io.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

namespace mcpexec {

using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kRecentBytes = 2048;

// Keeps (at least) the last `max` bytes of a stream in *window: only the
// chunk's own last `max` bytes are copied, and the window is trimmed when it
// reaches twice that, so a flood costs no more than a trickle.
void KeepLast(std::string* window, const char* chunk, size_t n, size_t max) {
  if (n >= max) {
    window->assign(chunk + n - max, max);
    return;
  }
  window->append(chunk, n);
  if (window->size() > 2 * max) window->erase(0, window->size() - max);
}

}  // namespace

void Executor::OnDeadline(RunIo& io, Clock::time_point now) {
  using Phase = RunIo::Phase;
  const auto deadline = io.started_at + std::chrono::seconds(io.req.timeout_s);
  if (io.cause == StopCause::kNone && now >= deadline) io.Stop(zygote_, StopCause::kTimeout);
  if (io.phase == Phase::kInterrupting && !io.cell_end && now >= io.interrupt_deadline) {
    io.interrupt_ignored = true;  // native code that never checks for signals
    io.Kill(zygote_);
  }
  if (io.phase == Phase::kKilling && !io.reaped && !io.failed && now >= io.kill_deadline) {
    // The sandbox did not confirm the end: not a result.
    io.failed = Failed{RunFailure::kSandboxStuck,
                       "the sandbox did not confirm the end of this run within 5 s of killing it"};
  }
}

void Executor::PumpUntilEnded(RunIo& io) {
  using Phase = RunIo::Phase;
  const auto deadline = io.started_at + std::chrono::seconds(io.req.timeout_s);
  while (!io.ended()) {
    auto now = Clock::now();
    OnDeadline(io, now);
    if (io.failed) break;
    if (io.reaped && now >= io.pipe_deadline) break;
    if (io.progress && now >= io.next_progress) ReportProgress(io);
    auto until = io.reaped                     ? io.pipe_deadline
                 : io.phase == Phase::kKilling ? io.kill_deadline
                                               : deadline;
    if (io.phase == Phase::kInterrupting) until = io.interrupt_deadline;
    if (io.progress) until = std::min(until, io.next_progress);
    int timeout_ms = static_cast<int>(std::max<int64_t>(0, Millis(until - now)) + 1);

    // A closed pipe's fd is -1 (reset when read to its end), and poll skips
    // it; so is stdin's once fed, and the cancellation's once a cause holds.
    enum { kOut, kErr, kStatus, kResults, kStdin, kCancel, kWake, kTools, kCount };
    pollfd p[kCount] = {
        {io.out.open ? io.fds.out_r.get() : -1, POLLIN, 0},
        {io.err.open ? io.fds.err_r.get() : -1, POLLIN, 0},
        {io.fds.st_r.get(), POLLIN, 0},
        {io.fds.res_r.get(), POLLIN, 0},
        {io.fds.in_w.get(), POLLOUT, 0},
        {io.cause == StopCause::kNone ? io.cancel.fd() : -1, POLLIN, 0},
        {io.slot.wake_fd(), POLLIN, 0},
        {io.tools ? io.tools->fd() : -1, POLLIN, 0},
    };
    int rc = poll(p, kCount, timeout_ms);
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;

    if (p[kOut].revents) Drain(io, io.fds.out_r.get(), io.out);
    if (p[kErr].revents) Drain(io, io.fds.err_r.get(), io.err);
    if (p[kResults].revents && !io.results.Read(io.fds.res_r.get())) io.fds.res_r.Reset();
    if (p[kStatus].revents && !io.status.Read(io.fds.st_r.get())) {
      io.fds.st_r.Reset();  // bounded: whatever else the run writes there fails
    }
    io.ReadCellEnd();
    if (p[kStdin].revents) FeedStdin(io);
    if (p[kCancel].revents) {
      // The server's shutdown ends a session's interpreter too.
      io.Stop(zygote_, io.cancel.reason() == CancelReason::kShutdown ? StopCause::kShutdown
                                                                     : StopCause::kCancelled);
    }
    if (p[kWake].revents) OnSlotChanged(io);
    if (p[kTools].revents) io.tools->OnReadable();
    io.StampDrained();
  }
  // What the pipes still hold: the verdict of a run that ended fast, and
  // what a session's cell wrote before its end record (already in the pipes:
  // written first by the same thread).
  if (io.fds.st_r) io.status.Read(io.fds.st_r.get());
  io.ReadCellEnd();
  if (io.cell_end) {
    if (io.out.open) Drain(io, io.fds.out_r.get(), io.out);
    if (io.err.open) Drain(io, io.fds.err_r.get(), io.err);
  }
  if (io.fds.res_r) io.results.Read(io.fds.res_r.get());
  io.fds.in_w.Reset();
  io.StampDrained();
}

void Executor::Drain(RunIo& io, int fd, Stream& s) {
  char buf[65536];
  const auto tail = static_cast<size_t>(io.tail_bytes);
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      io.outcome.output_bytes += n;
      int64_t keep = std::min<int64_t>(n, io.budget);
      if (keep > 0) {
        s.kept->append(buf, keep);
        io.budget -= keep;
      }
      if (keep < n) {
        io.outcome.truncated = true;  // read on and drop: never block the writer
        if (!s.lost && io.resources) {
          // The first loss: the stream before this chunk is all in s.kept,
          // and it goes to the store with all that follows (the client
          // reads it whole).
          s.whole = io.resources->Begin(io.whole_limit);
          if (s.whole) s.whole->Write(s.kept->data(), s.kept->size() - static_cast<size_t>(keep));
        }
        s.lost = true;
      }
      if (s.whole) s.whole->Write(buf, static_cast<size_t>(n));
      if (tail > 0) KeepLast(&s.last, buf, static_cast<size_t>(n), tail);
      if (io.progress) KeepLast(&io.recent, buf, static_cast<size_t>(n), kRecentBytes);
      continue;
    }
    if (n == 0) s.open = false;
    if (n < 0 && errno == EINTR) continue;
    return;
  }
}

void Executor::FeedStdin(RunIo& io) {
  const std::string& data = io.req.stdin_data;
  ssize_t n = write(io.fds.in_w.get(), data.data() + io.stdin_off, data.size() - io.stdin_off);
  if (n > 0) io.stdin_off += static_cast<size_t>(n);
  // EOF after the given bytes; a reader that closed its end (EPIPE) gets the rest dropped.
  if ((n < 0 && errno != EAGAIN && errno != EINTR) || io.stdin_off == data.size()) {
    io.fds.in_w.Reset();
  }
}

// The seconds elapsed and the newest output lines (at most 5 and 512 bytes).
void Executor::ReportProgress(RunIo& io) {
  io.next_progress += kProgressEvery;
  const auto now = Clock::now();
  if (io.next_progress < now) io.next_progress = now + kProgressEvery;
  std::string_view recent = io.recent;
  while (!recent.empty() && recent.back() == '\n') recent.remove_suffix(1);
  size_t start = 0;
  int newlines = 0;
  for (size_t i = recent.size(); i-- > 0;) {
    if (recent[i] == '\n' && ++newlines == 5) {
      start = i + 1;
      break;
    }
  }
  std::string newest = RepairUtf8(Utf8Tail(recent.substr(start), 512));
  io.progress(std::chrono::duration<double>(now - io.started_at).count(),
              newest.empty() ? "(no output yet)" : newest);
}

void Executor::OnSlotChanged(RunIo& io) {
  uint64_t v;
  (void)!read(io.slot.wake_fd(), &v, sizeof v);
  std::lock_guard<std::mutex> lock(io.slot.mu);
  if (io.slot.lost) {
    if (!io.failed) io.failed = Failed{io.slot.lost_cause, io.slot.lost_reason};
    return;
  }
  if (io.slot.exited && !io.reaped) {
    io.reaped = RunIo::Reaped{io.slot.wait_status, io.slot.oom_killed, io.slot.ended_by};
    io.status_at = Clock::now();
    io.pipe_deadline = io.status_at + kPipeGrace;
  }
}

}  // namespace mcpexec
