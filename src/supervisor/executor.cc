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
#include "base/unique_fd.h"
#include "base/utf8.h"
#include "sandbox/layers.h"
#include "supervisor/results.h"

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

UniqueFd MakeCodeMemfd(const std::string& code) {
  UniqueFd fd(memfd_create("mcp-exec-code", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return fd;
  size_t off = 0;
  while (off < code.size()) {
    ssize_t n = write(fd.get(), code.data() + off, code.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return UniqueFd();
    off += n;
  }
  // The runner may read it, never change it.
  fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return fd;
}

// The limit a signal stands for, when it stands for one.
RunEnd EndForSignal(int sig) {
  switch (sig) {
    case SIGSYS:
      return RunEnd::kSeccomp;  // a call the policy kills on
    case SIGXCPU:
      return RunEnd::kCpu;
    case SIGXFSZ:
      return RunEnd::kFileSize;
    default:
      return RunEnd::kSignal;
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
    c.slot->CloseWake();
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

// The fds of one run: the supervisor's ends and the runner's (handed to the
// zygote, then closed here).
struct Executor::RunFds {
  UniqueFd in_r, in_w, out_r, out_w, err_r, err_w, st_r, st_w, res_r, res_w, code;

  bool Make(const RunRequest& req) {
    code = MakeCodeMemfd(wire::EncodeRunBundle(req.code, req.files));
    if (!code || !MakePipe(&in_r, &in_w, O_CLOEXEC) || !MakePipe(&out_r, &out_w, O_CLOEXEC) ||
        !MakePipe(&err_r, &err_w, O_CLOEXEC) || !MakePipe(&st_r, &st_w, O_CLOEXEC) ||
        !MakePipe(&res_r, &res_w, O_CLOEXEC)) {
      return false;
    }
    for (const UniqueFd* fd : {&in_w, &out_r, &err_r, &st_r, &res_r}) {
      fcntl(fd->get(), F_SETFL, O_NONBLOCK);
    }
    return true;
  }
  // The runner's copies, in wire::RunFd order.
  std::array<int, wire::kRunFdCount> RunnerEnds() const {
    std::array<int, wire::kRunFdCount> ends{};
    ends[wire::kStdin] = in_r.get();
    ends[wire::kStdout] = out_w.get();
    ends[wire::kStderr] = err_w.get();
    ends[wire::kStatus] = st_w.get();
    ends[wire::kCode] = code.get();
    ends[wire::kResults] = res_w.get();
    return ends;
  }
  // The runner holds its own copies now; ours would keep the pipes open.
  void CloseRunnerEnds() {
    for (UniqueFd* fd : {&in_r, &out_w, &err_w, &st_w, &res_w, &code}) fd->Reset();
  }
};

namespace {

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

// After a kill, the zygote confirms the end within this; after the exit, the
// pipes close as soon as what the run left behind is killed.
constexpr auto kKillGrace = std::chrono::seconds(5);
constexpr auto kPipeGrace = std::chrono::seconds(2);
// How often a call that asked for progress hears of its run.
constexpr auto kProgressEvery = std::chrono::seconds(1);
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

// A run's private working directory: removed on every path out of Run()
// unless handed to the cleaner.
class Executor::Workdir {
 public:
  Workdir() = default;
  Workdir(const Workdir&) = delete;
  Workdir& operator=(const Workdir&) = delete;
  ~Workdir() {
    if (!path_.empty()) RemoveTree(path_);
  }
  void Set(std::string path) { path_ = std::move(path); }
  const std::string& path() const { return path_; }
  std::string Release() { return std::exchange(path_, std::string()); }

 private:
  std::string path_;
};

// A run that is executing, for the /dev/shm purge: registered while the run
// goes, removed on every path out of Run().
class Executor::ActiveRun {
 public:
  explicit ActiveRun(Executor& e)
      : e_(e),
        start_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count()) {
    std::lock_guard<std::mutex> lock(e_.mu_);
    e_.active_starts_.insert(start_ns_);
  }
  ActiveRun(const ActiveRun&) = delete;
  ActiveRun& operator=(const ActiveRun&) = delete;
  ~ActiveRun() { End(); }
  void End() {
    if (ended_) return;
    ended_ = true;
    std::lock_guard<std::mutex> lock(e_.mu_);
    e_.active_starts_.erase(e_.active_starts_.find(start_ns_));
  }

 private:
  Executor& e_;
  const int64_t start_ns_;
  bool ended_ = false;
};

// One output stream: what is kept under the shared budget, and the last
// bytes of all it carried (for the tail of a stream that lost bytes).
struct Executor::Stream {
  explicit Stream(std::string* into) : kept(into) {}
  std::string* kept;
  bool open = true;
  bool lost = false;
  std::string last;  // at most 2 x tail_bytes while the run goes
};

// The I/O of one launched run, until its runner is reaped and its output
// pipes are closed: stdin fed, both streams read under one budget, the
// status pipe read up to its bound, the deadline and cancellation enforced.
struct Executor::RunIo {
  const uint64_t run_id;
  const RunRequest& req;
  CancelToken& cancel;
  RunSlot& slot;
  RunFds& fds;
  RunOutcome& outcome;
  const Clock::time_point started_at;
  int64_t budget;
  int64_t tail_bytes;
  ResultsReader results;
  Stream out, err;
  const Progress& progress;
  Clock::time_point next_progress{};
  std::string recent{};  // the newest output of either stream, for progress
  StatusReader status{};
  bool status_open = true, results_open = true;
  bool killed = false, timed_out = false, cancelled = false, exited = false, lost = false,
       stuck = false;
  bool oom_killed = false;
  int wait_status = 0;
  std::string lost_reason{};
  size_t stdin_off = 0;
  Clock::time_point kill_deadline{}, pipe_deadline{};

  void Kill(ZygoteClient& zygote) {
    if (killed) return;
    killed = true;
    zygote.Kill(run_id);
    kill_deadline = Clock::now() + kKillGrace;
  }
};

std::variant<RunOutcome, std::string> Executor::Run(const RunRequest& req, CancelToken& cancel,
                                                    const Progress& progress) {
  const auto queued_at = Clock::now();
  if (auto refused = AcquireSlot(cancel)) return *refused;
  // From here on the slot is ours until the answer is ready: it goes back
  // with the answer, so a client that calls again at once finds room.
  SlotGuard slot_guard(scheduler_);
  RunOutcome outcome;
  outcome.queue_ms = Millis(Clock::now() - queued_at);
  const uint64_t run_id = next_run_id_++;

  Workdir workdir;
  RunFds fds;
  std::optional<std::string> error = PrepareWorkdir(&workdir);
  if (!error && !fds.Make(req)) error = std::string("pipes: ") + strerror(errno);
  std::shared_ptr<RunSlot> slot = error ? nullptr : RunSlot::Make();
  if (!error && !slot) error = std::string("eventfd: ") + strerror(errno);
  if (error) {
    log::Error("run_not_started", {{"run_id", run_id}, {"error", *error}});
    return "internal error: " + *error;
  }
  ActiveRun active(*this);
  const auto started_at = Clock::now();  // a wait for a restarting sandbox counts
  if (auto refused = Handover(run_id, req, workdir.path(), fds, slot)) return *refused;

  RunIo io{run_id,
           req,
           cancel,
           *slot,
           fds,
           outcome,
           started_at,
           config_.max_output_bytes,
           config_.tail_bytes,
           ResultsReader(ResultLimitsFor(config_)),
           Stream(&outcome.stdout_data),
           Stream(&outcome.stderr_data),
           progress};
  io.next_progress = started_at + kProgressEvery;
  PumpUntilEnded(io);
  outcome.duration_ms = Millis(Clock::now() - io.started_at);
  active.End();
  std::optional<std::string> tool_error = Settle(io);
  if (tool_error) zygote_.Kill(run_id);  // whatever is left of it
  QueueCleanup({run_id, slot, workdir.Release()});
  Report(run_id, req, outcome, tool_error.has_value());
  if (tool_error) return *tool_error;
  return outcome;
}

std::optional<std::string> Executor::AcquireSlot(CancelToken& cancel) {
  // A cancelled call leaves the queue at once: the token wakes the scheduler.
  cancel.OnCancel([this] { scheduler_.Wake(); });
  bool acquired = scheduler_.Acquire([&] { return cancel.cancelled(); });
  cancel.OnCancel(nullptr);
  if (acquired) return std::nullopt;
  return std::string(cancel.reason() == CancelReason::kShutdown
                         ? "the server is shutting down; this call was still queued and did not run"
                         : "the run was cancelled before it started");
}

std::optional<std::string> Executor::PrepareWorkdir(Workdir* workdir) {
  // Runs of the server's own uid (container posture) could change its
  // folder's mode (Landlock does not cover chmod): set it again every time.
  chmod(base_dir_.c_str(), 0711);
  // A run starts with nothing of the finished ones in a shared /dev/shm.
  if (shared_dev_shm_) PurgeDevShm();
  workdir->Set(MakePrivateDir(base_dir_, "run-"));
  if (workdir->path().empty()) return std::string("mkdtemp: ") + strerror(errno);
  // Started as root, runs are the sandbox uid: where no tmpfs is mounted over
  // it, the directory itself must be theirs.
  if (geteuid() == 0 && chown(workdir->path().c_str(), kSandboxUid, kSandboxGid) != 0) {
    return std::string("chown(workdir): ") + strerror(errno);
  }
  return std::nullopt;
}

std::optional<std::string> Executor::Handover(uint64_t run_id, const RunRequest& req,
                                              const std::string& workdir, RunFds& fds,
                                              const std::shared_ptr<RunSlot>& slot) {
  wire::RunParams params{};
  snprintf(params.workdir, sizeof params.workdir, "%s", workdir.c_str());
  params.timeout_s = req.timeout_s;
  std::string launch_error;
  if (!zygote_.Launch(run_id, params, fds.RunnerEnds().data(), slot, &launch_error)) {
    return launch_error;
  }
  fds.CloseRunnerEnds();
  if (req.stdin_data.empty()) fds.in_w.Reset();
  return std::nullopt;
}

void Executor::PumpUntilEnded(RunIo& io) {
  const auto deadline = io.started_at + std::chrono::seconds(io.req.timeout_s);
  while (!io.exited || io.out.open || io.err.open || io.results_open) {
    auto now = Clock::now();
    if (!io.killed && now >= deadline) {
      io.timed_out = true;
      io.Kill(zygote_);
    }
    if (io.killed && !io.exited && now >= io.kill_deadline) {
      io.stuck = true;  // the sandbox did not confirm the end: not a result
      break;
    }
    if (io.exited && now >= io.pipe_deadline) break;
    if (io.progress && now >= io.next_progress) ReportProgress(io);
    auto until = io.exited ? io.pipe_deadline : io.killed ? io.kill_deadline : deadline;
    if (io.progress) until = std::min(until, io.next_progress);
    int timeout_ms = static_cast<int>(std::max<int64_t>(0, Millis(until - now)) + 1);

    enum { kOut, kErr, kStatus, kResults, kStdin, kCancel, kWake, kCount };
    pollfd p[kCount] = {
        {io.out.open ? io.fds.out_r.get() : -1, POLLIN, 0},
        {io.err.open ? io.fds.err_r.get() : -1, POLLIN, 0},
        {io.status_open ? io.fds.st_r.get() : -1, POLLIN, 0},
        {io.results_open ? io.fds.res_r.get() : -1, POLLIN, 0},
        {io.fds.in_w.get(), POLLOUT, 0},  // -1 once stdin is done: poll skips it
        {io.cancel.fd(), POLLIN, 0},
        {io.slot.wake_fd(), POLLIN, 0},
    };
    int rc = poll(p, kCount, timeout_ms);
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;

    if (p[kOut].revents) Drain(io, io.fds.out_r.get(), io.out);
    if (p[kErr].revents) Drain(io, io.fds.err_r.get(), io.err);
    if (p[kResults].revents && !io.results.Read(io.fds.res_r.get())) {
      io.results_open = false;
      io.fds.res_r.Reset();
    }
    if (p[kStatus].revents && !io.status.Read(io.fds.st_r.get())) {
      io.status_open = false;
      io.fds.st_r.Reset();  // bounded: whatever else the run writes there fails
    }
    if (p[kStdin].revents) FeedStdin(io);
    if (p[kCancel].revents && !io.cancelled) {
      io.cancelled = true;
      io.Kill(zygote_);
    }
    if (p[kWake].revents) OnSlotChanged(io);
    if (io.lost) break;
  }
  // What the status pipe still holds (the verdict of a run that ended fast).
  if (io.status_open) io.status.Read(io.fds.st_r.get());
  if (io.results_open) io.results.Read(io.fds.res_r.get());
  io.fds.in_w.Reset();
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
        s.lost = true;
      }
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
    io.lost = true;
    io.lost_reason = io.slot.lost_reason;
    return;
  }
  if (io.slot.exited && !io.exited) {
    io.exited = true;
    io.wait_status = io.slot.wait_status;
    io.oom_killed = io.slot.oom_killed;
    io.pipe_deadline = Clock::now() + kPipeGrace;
  }
}

// The outcome from the trusted side: the verdict the runner wrote before the
// code ran, and the wait status the zygote reaped. Returns a tool error
// message when the run never really started.
std::optional<std::string> Executor::Settle(RunIo& io) {
  RunOutcome& o = io.outcome;
  if (io.lost) return io.lost_reason;
  if (io.stuck) {
    return std::string("the sandbox did not confirm the end of this run within 5 s of killing it");
  }
  const wire::LockdownVerdict* v = io.status.verdict();
  if (!v) {
    std::string how = !io.exited ? "it was ended before its lockdown finished"
                      : WIFSIGNALED(io.wait_status)
                          ? "it died by signal " + std::to_string(WTERMSIG(io.wait_status))
                          : "it exited with status " + std::to_string(WEXITSTATUS(io.wait_status));
    return "the sandbox could not start this run: " + how + " before its lockdown finished";
  }
  if (!v->ok) return std::string("the sandbox could not lock this run down: ") + v->error;
  o.lockdown_us = v->lockdown_us;
  o.lockdown_ahead_us = v->ahead_us;
  const auto tail = static_cast<size_t>(io.tail_bytes);
  o.stdout_lost = io.out.lost;
  o.stderr_lost = io.err.lost;
  if (io.out.lost) o.stdout_tail = std::string(Utf8Tail(io.out.last, tail));
  if (io.err.lost) o.stderr_tail = std::string(Utf8Tail(io.err.last, tail));
  io.results.Finish(&o);
  if (WIFSIGNALED(io.wait_status)) {
    o.signal = WTERMSIG(io.wait_status);
    o.exit_code = -1;
  } else {
    o.exit_code = WEXITSTATUS(io.wait_status);
  }
  if (io.timed_out) {
    o.exit_code = -1;
    o.end = RunEnd::kTimeout;
  } else if (io.cancelled) {
    o.exit_code = -1;
    o.end = io.cancel.reason() == CancelReason::kShutdown ? RunEnd::kShutdown : RunEnd::kCancelled;
  } else if (io.oom_killed || (io.status.note() == wire::kReasonMemory && o.exit_code == 1)) {
    // The run as a whole passed its memory limit (the cgroup killed), or an
    // uncaught MemoryError (what only Python knows, believed with exit 1).
    o.end = RunEnd::kMemory;
  } else if (o.signal) {
    o.end = EndForSignal(o.signal);
  }
  return std::nullopt;
}

void Executor::QueueCleanup(Cleanup c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cleanups_.push_back(std::move(c));
  }
  cv_.notify_all();
}

void Executor::Report(uint64_t run_id, const RunRequest& req, const RunOutcome& o, bool failed) {
  const bool timed_out = o.end == RunEnd::kTimeout;
  log::Info("run", {{"run_id", run_id},
                    {"exit_code", o.exit_code},
                    {"duration_ms", o.duration_ms},
                    {"queue_ms", o.queue_ms},
                    {"stdout_bytes", o.stdout_data.size()},
                    {"stderr_bytes", o.stderr_data.size()},
                    {"output_bytes", o.output_bytes},
                    {"truncated", o.truncated},
                    {"timed_out", timed_out},
                    {"signal", o.signal},
                    {"reason", failed ? "lost" : RunEndName(o.end)},
                    {"code_bytes", req.code.size()},
                    {"stdin_bytes", req.stdin_data.size()},
                    {"lockdown_us", failed ? -1 : o.lockdown_us},
                    {"lockdown_ahead_us", failed ? -1 : o.lockdown_ahead_us}});
  if (!metrics_) return;
  std::string outcome = failed                     ? "lost"
                        : o.end != RunEnd::kExited ? RunEndName(o.end)
                        : o.exit_code != 0         ? "error"
                                                   : "ok";
  metrics_->RecordRun(outcome, o.duration_ms / 1000.0, o.queue_ms / 1000.0);
}

}  // namespace mcpexec
