#include "transport/stdio_transport.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "base/log.h"

namespace mcpexec {

namespace {

class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  void Send(const nlohmann::json& msg) {
    std::string line = msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return;
    size_t off = 0;
    while (off < line.size()) {
      ssize_t n = write(fd_, line.data() + off, line.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        broken_ = true;  // the client closed stdout: nobody is listening
        return;
      }
      off += n;
    }
  }

 private:
  int fd_;
  std::mutex mu_;
  bool broken_ = false;
};

// Waits for the calls in flight to end, at most MCP_EXEC_SHUTDOWN_GRACE_S;
// cut short by a termination signal or a client that stopped reading too
// (stdout's reader gone: nobody is left to answer).
void DrainAfterEof(McpSession& session, const Config& config, int out_fd, int signal_fd) {
  if (session.in_flight() == 0) return;
  log::Info("stdio_draining",
            {{"in_flight", session.in_flight()}, {"grace_s", config.shutdown_grace_s}});
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(config.shutdown_grace_s);
  // One wait on the three things that end it: the last call's end (the
  // session's idle eventfd), stdout's reader gone, a signal.
  const int idle_fd = session.IdleFd();
  while (session.in_flight() > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      log::Info("stdio_drain_cut", {{"why", "grace"}, {"grace_s", config.shutdown_grace_s}});
      return;
    }
    pollfd p[3] = {{idle_fd, POLLIN, 0}, {out_fd, 0, 0}, {signal_fd, POLLIN, 0}};
    if (poll(p, signal_fd >= 0 ? 3 : 2,
             static_cast<int>(std::min<int64_t>(left.count(), 1 << 30))) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[0].revents & POLLIN) {
      uint64_t n;
      (void)!read(idle_fd, &n, sizeof n);
      continue;  // the loop's test says whether a call is still in flight
    }
    if ((p[1].revents & (POLLERR | POLLHUP)) || (p[2].revents & POLLIN)) {
      log::Info("stdio_drain_cut",
                {{"why", (p[1].revents & (POLLERR | POLLHUP)) ? "stdout closed" : "signal"}});
      return;
    }
  }
}

}  // namespace

int ServeStdio(Server& server, const Config& config, int in_fd, int out_fd, int signal_fd,
               CallPool* pool) {
  LineWriter writer(out_fd);
  McpSession::Options options;
  options.pool = pool;
  McpSession session(
      server, [&writer](const nlohmann::json& m) { writer.Send(m); }, options);
  const size_t max_line = static_cast<size_t>(EffectiveMaxRequestBytes(config));
  std::string buf;
  bool discarding = false;  // inside an oversized line: drop until its newline
  auto refuse_oversized = [&] {
    writer.Send(jsonrpc::Error(
        nullptr, jsonrpc::kInvalidRequest,
        "message exceeds " + std::to_string(max_line) + " bytes (MCP_EXEC_MAX_REQUEST_BYTES)"));
    log::Warn("oversized_message", {{"limit", max_line}});
  };
  std::string stop_reason = "eof";
  char chunk[65536];
  for (;;) {
    pollfd p[2] = {{in_fd, POLLIN, 0}, {signal_fd, POLLIN, 0}};
    int rc = poll(p, signal_fd >= 0 ? 2 : 1, -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      stop_reason = "poll_error";
      break;
    }
    if (signal_fd >= 0 && (p[1].revents & POLLIN)) {
      signalfd_siginfo si{};
      (void)!read(signal_fd, &si, sizeof si);
      stop_reason = "signal " + std::to_string(si.ssi_signo);
      break;
    }
    if (!p[0].revents) continue;
    ssize_t n = read(in_fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    size_t start = 0;
    for (ssize_t i = 0; i < n; ++i) {
      if (chunk[i] != '\n') continue;
      if (!discarding) {
        buf.append(chunk + start, i - start);
        if (!buf.empty() && buf.back() == '\r') buf.pop_back();
        // A line whose end came in the read that took it past the cap is
        // refused like one still open (the check below sees only the rest).
        if (buf.size() > max_line) {
          refuse_oversized();
        } else if (buf.find_first_not_of(" \t") != std::string::npos) {
          session.HandleText(buf);
        }
      }
      buf.clear();
      discarding = false;
      start = i + 1;
    }
    if (!discarding) buf.append(chunk + start, n - start);
    if (!discarding && buf.size() > max_line) {
      // Never buffer an unbounded line: answer now, skip the rest of it.
      refuse_oversized();
      buf.clear();
      buf.shrink_to_fit();
      discarding = true;
    }
  }
  log::Info("stdio_stopping", {{"reason", stop_reason}, {"in_flight", session.in_flight()}});
  // The end of stdin is the end of the requests, not of the client: the
  // calls it sent (`printf ... | mcp-exec` sends them before the runtime is
  // even warm) run and are answered, for up to the grace.
  if (stop_reason == "eof") {
    DrainAfterEof(session, config, out_fd, signal_fd);
  } else if (stop_reason.rfind("signal", 0) == 0) {
    server.tool().ServerStopping();
  }
  // Every call still in flight is answered before we exit: its output so
  // far with reason "shutdown" (or a tool error if it was still queued);
  // every open subscriptions/listen gets its closing result.
  session.EndListens();
  session.CancelAll(CancelReason::kShutdown);
  session.WaitIdle(std::chrono::seconds(30));
  return 0;
}

}  // namespace mcpexec
