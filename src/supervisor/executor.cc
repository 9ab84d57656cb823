#include "supervisor/executor.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "base/fs_util.h"
#include "base/log.h"
#include "sandbox/layers.h"
#include "base/utf8.h"

namespace mcpexec {

using Clock = std::chrono::steady_clock;

namespace {

constexpr uid_t kSandboxUid = sandbox::RunLimits{}.sandbox_uid;
constexpr gid_t kSandboxGid = sandbox::RunLimits{}.sandbox_gid;

// Gives the running slot back on every path out of Run().
struct SlotGuard {
  Scheduler& s;
  explicit SlotGuard(Scheduler& sched) : s(sched) {}
  SlotGuard(const SlotGuard&) = delete;
  SlotGuard& operator=(const SlotGuard&) = delete;
  ~SlotGuard() { s.Release(); }
};

// Owns the fds of one run until they are handed over or closed.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  void Reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

bool MakePipe(Fd* read_end, Fd* write_end) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return false;
  read_end->fd = p[0];
  write_end->fd = p[1];
  return true;
}

int MakeCodeMemfd(const std::string& code) {
  int fd = memfd_create("mcp-exec-code", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off < code.size()) {
    ssize_t n = write(fd, code.data() + off, code.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return -1;
    }
    off += n;
  }
  // The runner may read it, never change it.
  fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return fd;
}

// The limit a signal stands for, when it stands for one.
std::string ReasonForSignal(int sig) {
  switch (sig) {
    case SIGSYS:
      return "seccomp";  // a call the policy kills on
    case SIGXCPU:
      return "cpu";
    case SIGXFSZ:
      return "file_size";
    default:
      return "signal";
  }
}

int64_t Millis(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

Executor::Executor(const Config& config, ZygoteClient& zygote, Scheduler& scheduler,
                   Metrics* metrics)
    : config_(config), zygote_(zygote), scheduler_(scheduler), metrics_(metrics) {}

Executor::~Executor() { Shutdown(); }

bool Executor::Init(bool shared_dev_shm, std::string* error) {
  shared_dev_shm_ = shared_dev_shm;
  if (!EnsureDir(config_.workdir_root, 0755)) {
    *error = "MCP_EXEC_WORKDIR_ROOT " + config_.workdir_root +
             " is not a usable directory: " + strerror(errno);
    return false;
  }
  base_dir_ = MakePrivateDir(config_.workdir_root, "mcp-exec-");
  if (base_dir_.empty()) {
    *error = "mkdtemp(" + config_.workdir_root + "/mcp-exec-XXXXXX): " + strerror(errno);
    return false;
  }
  chmod(base_dir_.c_str(), 0711);  // runners may run as another uid: they traverse, never list
  cleaner_ = std::thread([this] { CleanerLoop(); });
  return true;
}

void Executor::CleanerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !cleanups_.empty(); });
    if (cleanups_.empty()) return;
    Cleanup c = std::move(cleanups_.front());
    cleanups_.pop_front();
    lock.unlock();
    {
      // The run's end was confirmed before its answer (or the run was lost,
      // and the zygote that held it is gone): nothing to wait for here, so
      // cleanups never queue behind each other.
      std::lock_guard<std::mutex> slot_lock(c.slot->mu);
      if (!c.slot->exited && !c.slot->lost) {
        log::Warn("run_end_unconfirmed", {{"run_id", c.run_id}});
      }
    }
    if (!RemoveTree(c.workdir)) {
      log::Error("workdir_not_removed", {{"run_id", c.run_id}, {"errno", strerror(errno)}});
    }
    if (shared_dev_shm_) PurgeDevShm();
    {
      std::lock_guard<std::mutex> slot_lock(c.slot->mu);  // Notify() writes under it
      if (c.slot->wake_fd >= 0) close(c.slot->wake_fd);
      c.slot->wake_fd = -1;
    }
    lock.lock();
  }
}

// Without a mount namespace, /dev/shm is the one place runs share that
// Landlock lets them write (multiprocessing's semaphores live there). Remove
// what the sandbox uid left, except entries younger than a run still going.
void Executor::PurgeDevShm() {
  int64_t oldest_active;
  {
    std::lock_guard<std::mutex> lock(mu_);
    oldest_active = active_starts_.empty() ? INT64_MAX : *active_starts_.begin();
  }
  DIR* d = opendir("/dev/shm");
  if (!d) return;
  int dfd = dirfd(d);
  uid_t uid = geteuid() == 0 ? kSandboxUid : geteuid();
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != uid) continue;
    int64_t ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
    if (ctime_ns >= oldest_active) continue;
    if (S_ISDIR(st.st_mode)) {
      RemoveTree("/dev/shm/" + name);
    } else {
      unlinkat(dfd, name.c_str(), 0);
    }
  }
  closedir(d);
}

void Executor::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (cleaner_.joinable()) cleaner_.join();
  if (!base_dir_.empty()) RemoveTree(base_dir_);
}

namespace {

// The fds of one run: the supervisor's ends and the runner's (handed to the
// zygote, then closed here).
struct RunFds {
  Fd in_r, in_w, out_r, out_w, err_r, err_w, st_r, st_w, code;
};

bool MakeRunFds(const std::string& code, RunFds* f) {
  f->code.fd = MakeCodeMemfd(code);
  if (f->code.fd < 0 || !MakePipe(&f->in_r, &f->in_w) || !MakePipe(&f->out_r, &f->out_w) ||
      !MakePipe(&f->err_r, &f->err_w) || !MakePipe(&f->st_r, &f->st_w)) {
    return false;
  }
  for (int fd : {f->in_w.fd, f->out_r.fd, f->err_r.fd, f->st_r.fd}) fcntl(fd, F_SETFL, O_NONBLOCK);
  return true;
}

// What the status pipe said: at most kStatusReadMax bytes are ever kept.
class StatusReader {
 public:
  // Reads what is there; false once nothing more will be read (EOF, or the
  // bound is reached: the caller closes the pipe).
  bool Read(int fd) {
    for (;;) {
      ssize_t n = read(fd, buf_ + len_, sizeof buf_ - len_);
      if (n > 0) {
        len_ += static_cast<size_t>(n);
        if (len_ == sizeof buf_) return false;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n < 0 && errno == EAGAIN;
    }
  }
  // The verdict, if the first record is a well-formed one.
  const wire::LockdownVerdict* verdict() {
    if (len_ < sizeof verdict_) return nullptr;
    memcpy(&verdict_, buf_, sizeof verdict_);
    if (verdict_.magic != wire::kVerdictMagic) return nullptr;
    verdict_.error[sizeof verdict_.error - 1] = '\0';
    return &verdict_;
  }
  // The runtime's note after the verdict, if any.
  uint32_t note() const {
    wire::RunNote n{};
    if (len_ < sizeof(wire::LockdownVerdict) + sizeof n) return wire::kReasonNone;
    memcpy(&n, buf_ + sizeof(wire::LockdownVerdict), sizeof n);
    return n.magic == wire::kNoteMagic ? n.reason : wire::kReasonNone;
  }

 private:
  char buf_[wire::kStatusReadMax];
  size_t len_ = 0;
  wire::LockdownVerdict verdict_{};
};

}  // namespace

// The I/O of one launched run, until its runner is reaped and its output
// pipes are closed: stdin fed, both streams read under one budget, the
// status pipe read up to its bound, the deadline and cancellation enforced.
struct Executor::RunIo {
  const ExecRequest& req;
  CancelToken& cancel;
  RunSlot& slot;
  RunFds& fds;
  ExecResult& result;
  int64_t budget;
  StatusReader status{};
  bool stdout_open = true, stderr_open = true, status_open = true;
  bool killed = false, cancelled = false, exited = false, lost = false, stuck = false;
  bool oom_killed = false;
  int wait_status = 0;
  std::string lost_reason{};
  size_t stdin_off = 0;
};

void Executor::PumpUntilEnded(RunIo& io, uint64_t run_id, Clock::time_point started_at) {
  const auto deadline = started_at + std::chrono::seconds(io.req.timeout_s);
  // After a kill, the zygote confirms the end within this; after the exit,
  // the pipes close as soon as what the run left behind is killed.
  constexpr auto kKillGrace = std::chrono::seconds(5);
  constexpr auto kPipeGrace = std::chrono::seconds(2);
  Clock::time_point kill_deadline{}, pipe_deadline{};
  auto kill_run = [&] {
    if (io.killed) return;
    io.killed = true;
    zygote_.Kill(run_id);
    kill_deadline = Clock::now() + kKillGrace;
  };
  auto drain = [&](int fd, std::string* into, bool* open) {
    char buf[65536];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) {
        io.result.output_bytes += n;
        int64_t keep = std::min<int64_t>(n, io.budget);
        if (keep > 0) into->append(buf, keep), io.budget -= keep;
        if (keep < n) io.result.truncated = true;  // read on and drop: never block the writer
        continue;
      }
      if (n == 0) *open = false;
      if (n < 0 && errno == EINTR) continue;
      return;
    }
  };
  if (io.req.stdin_data.empty()) io.fds.in_w.Reset();
  while (!io.exited || io.stdout_open || io.stderr_open) {
    auto now = Clock::now();
    if (!io.killed && now >= deadline) {
      io.result.timed_out = true;
      kill_run();
    }
    if (io.killed && !io.exited && now >= kill_deadline) {
      io.stuck = true;  // the sandbox did not confirm the end: not a result
      break;
    }
    if (io.exited && now >= pipe_deadline) break;
    auto until = io.exited ? pipe_deadline : io.killed ? kill_deadline : deadline;
    int timeout_ms = static_cast<int>(std::max<int64_t>(0, Millis(until - now)) + 1);

    pollfd p[6];
    int np = 0;
    int i_out = -1, i_err = -1, i_st = -1, i_in = -1;
    if (io.stdout_open) p[i_out = np++] = {io.fds.out_r.fd, POLLIN, 0};
    if (io.stderr_open) p[i_err = np++] = {io.fds.err_r.fd, POLLIN, 0};
    if (io.status_open) p[i_st = np++] = {io.fds.st_r.fd, POLLIN, 0};
    if (io.fds.in_w.fd >= 0) p[i_in = np++] = {io.fds.in_w.fd, POLLOUT, 0};
    int i_cancel = np;
    p[np++] = {io.cancel.fd(), POLLIN, 0};
    int i_wake = np;
    p[np++] = {io.slot.wake_fd, POLLIN, 0};
    int rc = poll(p, np, timeout_ms);
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;

    if (i_out >= 0 && p[i_out].revents)
      drain(io.fds.out_r.fd, &io.result.stdout_data, &io.stdout_open);
    if (i_err >= 0 && p[i_err].revents)
      drain(io.fds.err_r.fd, &io.result.stderr_data, &io.stderr_open);
    if (i_st >= 0 && p[i_st].revents && !io.status.Read(io.fds.st_r.fd)) {
      io.status_open = false;
      io.fds.st_r.Reset();  // bounded: whatever else the run writes there fails
    }
    if (i_in >= 0 && p[i_in].revents) FeedStdin(io);
    if (p[i_cancel].revents && !io.cancelled) {
      io.cancelled = true;
      kill_run();
    }
    if (p[i_wake].revents) {
      uint64_t v;
      (void)!read(io.slot.wake_fd, &v, sizeof v);
      std::lock_guard<std::mutex> lock(io.slot.mu);
      if (io.slot.lost) {
        io.lost = true;
        io.lost_reason = io.slot.lost_reason;
        break;
      }
      if (io.slot.exited && !io.exited) {
        io.exited = true;
        io.wait_status = io.slot.wait_status;
        io.oom_killed = io.slot.oom_killed;
        pipe_deadline = Clock::now() + kPipeGrace;
      }
    }
  }
  // What the status pipe still holds (the verdict of a run that ended fast).
  if (io.status_open) io.status.Read(io.fds.st_r.fd);
  io.fds.in_w.Reset();
}

void Executor::FeedStdin(RunIo& io) {
  const std::string& data = io.req.stdin_data;
  ssize_t n = write(io.fds.in_w.fd, data.data() + io.stdin_off, data.size() - io.stdin_off);
  if (n > 0) io.stdin_off += static_cast<size_t>(n);
  // EOF after the given bytes; a reader that closed its end (EPIPE) gets the rest dropped.
  if ((n < 0 && errno != EAGAIN && errno != EINTR) || io.stdin_off == data.size())
    io.fds.in_w.Reset();
}

// The result from the trusted side: the verdict the runner wrote before the
// code ran, and the wait status the zygote reaped. Returns a tool error
// message when the run never really started.
std::optional<std::string> Executor::Settle(RunIo& io) {
  ExecResult& r = io.result;
  if (io.lost) return io.lost_reason;
  if (io.stuck)
    return std::string("the sandbox did not confirm the end of this run within 5 s of killing it");
  const wire::LockdownVerdict* v = io.status.verdict();
  if (!v) {
    std::string how = !io.exited ? "it was ended before its lockdown finished"
                      : WIFSIGNALED(io.wait_status)
                          ? "it died by signal " + std::to_string(WTERMSIG(io.wait_status))
                          : "it exited with status " + std::to_string(WEXITSTATUS(io.wait_status));
    return "the sandbox could not start this run: " + how + " before its lockdown finished";
  }
  if (!v->ok) return std::string("the sandbox could not lock this run down: ") + v->error;
  r.lockdown_us = v->lockdown_us;
  r.lockdown_ahead_us = v->ahead_us;
  if (WIFSIGNALED(io.wait_status)) {
    r.signal = WTERMSIG(io.wait_status);
    r.exit_code = -1;
  } else {
    r.exit_code = WEXITSTATUS(io.wait_status);
  }
  if (r.timed_out) {
    r.exit_code = -1;
    r.reason = "timeout";
  } else if (io.cancelled) {
    r.exit_code = -1;
    r.reason = io.cancel.reason() == CancelReason::kShutdown ? "shutdown" : "cancelled";
  } else if (io.oom_killed) {
    r.reason = "memory";  // the run as a whole passed its memory limit (cgroup)
  } else if (io.status.note() == wire::kReasonMemory && r.exit_code == 1) {
    r.reason = "memory";  // an uncaught MemoryError: what only Python knows
  } else if (r.signal) {
    r.reason = ReasonForSignal(r.signal);
  }
  return std::nullopt;
}

std::variant<ExecResult, std::string> Executor::Run(const ExecRequest& req, CancelToken& cancel) {
  auto queued_at = Clock::now();
  // A cancelled call leaves the queue at once: the token wakes the scheduler.
  cancel.OnCancel([this] { scheduler_.Wake(); });
  bool acquired = scheduler_.Acquire([&] { return cancel.cancelled(); });
  cancel.OnCancel(nullptr);
  if (!acquired) {
    return std::string(
        cancel.reason() == CancelReason::kShutdown
            ? "the server is shutting down; this call was still queued and did not run"
            : "the run was cancelled before it started");
  }
  // From here on the slot is ours until the answer is ready.
  SlotGuard slot_guard(scheduler_);
  ExecResult result;
  result.queue_ms = Millis(Clock::now() - queued_at);
  uint64_t run_id = next_run_id_++;
  auto fail_early = [&](const std::string& what) -> std::variant<ExecResult, std::string> {
    log::Error("run_not_started", {{"run_id", run_id}, {"error", what}});
    return "internal error: " + what;
  };

  // Runs of the server's own uid (container posture) could change its
  // folder's mode (Landlock does not cover chmod): set it again every time.
  chmod(base_dir_.c_str(), 0711);
  // A run starts with nothing of the finished ones in a shared /dev/shm.
  if (shared_dev_shm_) PurgeDevShm();
  std::string workdir = MakePrivateDir(base_dir_, "run-");
  if (workdir.empty()) return fail_early(std::string("mkdtemp: ") + strerror(errno));
  // Started as root, runs are the sandbox uid: where no tmpfs is mounted over
  // it, the directory itself must be theirs.
  if (geteuid() == 0 && chown(workdir.c_str(), kSandboxUid, kSandboxGid) != 0) {
    RemoveTree(workdir);
    return fail_early(std::string("chown(workdir): ") + strerror(errno));
  }
  RunFds fds;
  if (!MakeRunFds(req.code, &fds)) {
    RemoveTree(workdir);
    return fail_early(std::string("pipes: ") + strerror(errno));
  }
  auto slot = std::make_shared<RunSlot>();
  slot->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  wire::RunParams params{};
  snprintf(params.workdir, sizeof params.workdir, "%s", workdir.c_str());
  params.timeout_s = req.timeout_s;
  int child_fds[wire::kRunFdCount] = {fds.in_r.fd, fds.out_w.fd, fds.err_w.fd, fds.st_w.fd,
                                      fds.code.fd};

  auto started_at = Clock::now();
  const int64_t started_realtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count();
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_starts_.insert(started_realtime_ns);
  }
  auto run_over = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    active_starts_.erase(active_starts_.find(started_realtime_ns));
  };
  std::string launch_error;
  if (!zygote_.Launch(run_id, params, child_fds, slot, &launch_error)) {
    run_over();
    RemoveTree(workdir);
    close(slot->wake_fd);
    return launch_error;
  }
  // The runner holds its own copies now; ours would keep the pipes open.
  fds.in_r.Reset(), fds.out_w.Reset(), fds.err_w.Reset(), fds.st_w.Reset(), fds.code.Reset();

  RunIo io{req, cancel, *slot, fds, result, config_.max_output_bytes};
  PumpUntilEnded(io, run_id, started_at);
  result.duration_ms = Millis(Clock::now() - started_at);
  run_over();
  std::optional<std::string> tool_error = Settle(io);
  if (tool_error) zygote_.Kill(run_id);  // whatever is left of it
  {
    std::lock_guard<std::mutex> lock(mu_);
    cleanups_.push_back({run_id, slot, workdir});
  }
  cv_.notify_all();
  // The slot goes back with the answer (SlotGuard): a client that calls
  // again as soon as it has its result must find room.
  Report(run_id, req, result, tool_error.has_value());
  if (tool_error) return *tool_error;
  return result;
}

void Executor::Report(uint64_t run_id, const ExecRequest& req, const ExecResult& result,
                      bool failed) {
  log::Info("run", {{"run_id", run_id},
                    {"exit_code", result.exit_code},
                    {"duration_ms", result.duration_ms},
                    {"queue_ms", result.queue_ms},
                    {"stdout_bytes", result.stdout_data.size()},
                    {"stderr_bytes", result.stderr_data.size()},
                    {"output_bytes", result.output_bytes},
                    {"truncated", result.truncated},
                    {"timed_out", result.timed_out},
                    {"signal", result.signal},
                    {"reason", failed ? "lost" : result.reason},
                    {"code_bytes", req.code.size()},
                    {"stdin_bytes", req.stdin_data.size()},
                    {"lockdown_us", failed ? -1 : result.lockdown_us},
                    {"lockdown_ahead_us", failed ? -1 : result.lockdown_ahead_us}});
  if (!metrics_) return;
  std::string outcome = failed                                                ? "lost"
                        : result.timed_out                                    ? "timeout"
                        : !result.reason.empty() && result.reason != "signal" ? result.reason
                        : result.signal                                       ? "signal"
                        : result.exit_code != 0                               ? "error"
                                                                              : "ok";
  metrics_->RecordRun(outcome, result.duration_ms / 1000.0, result.queue_ms / 1000.0);
}

}  // namespace mcpexec
