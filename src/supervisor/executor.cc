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
#include <cstdint>
#include <cstring>
#include <optional>

#include "base/fs_util.h"
#include "base/log.h"
#include "base/unique_fd.h"
#include "base/utf8.h"
#include "process/wire.h"
#include "sandbox/layers.h"
#include "sandbox/limits.h"
#include "supervisor/results.h"
#include "supervisor/run_io.h"
#include "supervisor/status_reader.h"

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

std::string CgroupOf(RunSlot& slot) {
  std::lock_guard<std::mutex> lock(slot.mu);
  return slot.cgroup;
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
      // A run's end was confirmed before its answer (or the run was lost,
      // and the zygote that held it is gone): nothing to wait for here, so
      // cleanups never queue behind each other. A session's interpreter was
      // killed just now: its end comes within the kill grace.
      std::unique_lock<std::mutex> slot_lock(c.slot->mu);
      if (c.wait_for_end) {
        c.slot->cv.wait_for(slot_lock, kKillGrace, [&] { return c.slot->exited || c.slot->lost; });
      }
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

bool Executor::RunFds::Make(const RunRequest& req) {
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

std::variant<RunOutcome, std::string> Executor::Run(const RunRequest& req, CancelToken& cancel,
                                                    const Progress& progress) {
  const auto queued_at = Clock::now();
  const uint64_t run_id = next_run_id_++;
  if (auto refused = AcquireSlot(cancel)) return Fail(run_id, req, *refused);
  // From here on the slot is ours until the answer is ready: it goes back
  // with the answer, so a client that calls again at once finds room.
  SlotGuard slot_guard(scheduler_);
  RunOutcome outcome;
  outcome.queue_ms = Millis(Clock::now() - queued_at);

  Workdir workdir;
  RunFds fds;
  std::optional<std::string> error = PrepareWorkdir(&workdir);
  if (!error && !fds.Make(req)) error = std::string("pipes: ") + strerror(errno);
  std::shared_ptr<RunSlot> slot = error ? nullptr : RunSlot::Make();
  if (!error && !slot) error = std::string("eventfd: ") + strerror(errno);
  if (error) {
    log::Error("run_not_started", {{"run_id", run_id}, {"error", *error}});
    return Fail(run_id, req, {RunFailure::kInternal, "internal error: " + *error});
  }
  ActiveRun active(*this);
  const auto started_at = Clock::now();  // a wait for a restarting sandbox counts
  if (auto refused = Handover(run_id, req, workdir.path(), fds, slot)) {
    return Fail(run_id, req, *refused);
  }

  RunIo io(run_id, req, cancel, *slot, fds, outcome, started_at, config_, progress);
  PumpUntilEnded(io);
  outcome.duration_ms = Millis(Clock::now() - io.started_at);
  active.End();
  std::optional<Failed> failed = Settle(io);
  if (failed) zygote_.Kill(run_id);  // whatever is left of it
  QueueCleanup({run_id, slot, workdir.Release()});
  if (failed) return Fail(run_id, req, *failed, outcome);
  Report(run_id, req, outcome);
  return outcome;
}

std::variant<RunOutcome, std::string> Executor::RunCell(SessionRun& session, const RunRequest& req,
                                                        CancelToken& cancel,
                                                        const Progress& progress,
                                                        std::chrono::milliseconds interrupt_grace) {
  const auto queued_at = Clock::now();
  if (auto refused = AcquireSlot(cancel)) return Fail(session.run_id, req, *refused);
  SlotGuard slot_guard(scheduler_);  // an idle session holds none: only its cells
  RunOutcome outcome;
  outcome.queue_ms = Millis(Clock::now() - queued_at);
  RunFds fds;
  std::optional<std::string> error;
  if (!session.started()) {
    Workdir workdir;
    error = PrepareWorkdir(&workdir);
    session.slot = error ? nullptr : RunSlot::Make();
    if (!error && !session.slot) error = std::string("eventfd: ") + strerror(errno);
    session.run_id = next_run_id_++;
    session.workdir = workdir.Release();
    session.active = std::make_shared<ActiveRun>(*this);
  }
  if (!error && !fds.Make(req)) error = std::string("pipes: ") + strerror(errno);
  if (error) {
    log::Error("run_not_started", {{"run_id", session.run_id}, {"error", *error}});
    session.ended = "its interpreter could not be started";
    return Fail(session.run_id, req, {RunFailure::kInternal, "internal error: " + *error});
  }
  const int64_t oom_base = zygote_.OomKills(CgroupOf(*session.slot));
  const auto started_at = Clock::now();
  if (auto refused = HandCell(session, req, fds)) {
    session.ended = "its interpreter could not be reached";
    return Fail(session.run_id, req, *refused);
  }
  RunIo io(session.run_id, req, cancel, *session.slot, fds, outcome, started_at, config_, progress);
  io.session = &session;
  io.interrupt_grace = interrupt_grace;
  io.oom_base = oom_base;
  PumpUntilEnded(io);
  outcome.duration_ms = Millis(Clock::now() - io.started_at);
  std::optional<Failed> failed = SettleCell(io, session);
  ++session.cells;
  if (failed) return Fail(session.run_id, req, *failed, outcome, session.cells);
  Report(session.run_id, req, outcome, nullptr, session.cells);
  return outcome;
}

std::optional<Failed> Executor::HandCell(SessionRun& session, const RunRequest& req, RunFds& fds) {
  if (session.cells == 0) {
    return Handover(session.run_id, req, session.workdir, fds, session.slot, session.cpu_budget_s);
  }
  wire::RunParams params{};
  params.timeout_s = req.timeout_s;
  params.session_cpu_s = session.cpu_budget_s;
  std::string error;
  if (!zygote_.SendCell(session.run_id, params, fds.RunnerEnds().data(), &error)) {
    return Failed{RunFailure::kSandboxUnavailable, error};
  }
  fds.CloseRunnerEnds();
  if (req.stdin_data.empty()) fds.in_w.Reset();
  return std::nullopt;
}

namespace {

std::string DescribeStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    const char* name = sigabbrev_np(sig);
    return "was ended by signal " + std::to_string(sig) +
           (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
}

}  // namespace

std::string Executor::WhyInterpreterEnded(const RunIo& io) const {
  if (io.lost) return "the sandbox restarted and took its interpreter with it";
  if (io.ignored_interrupt) {
    return "its cell did not stop within " + std::to_string(io.interrupt_grace.count()) +
           " ms of KeyboardInterrupt (after " +
           (io.timed_out ? "its " + std::to_string(io.req.timeout_s) + " s timeout"
                         : std::string("a cancellation")) +
           "), so its interpreter was killed";
  }
  if (io.cancelled && io.cancel.reason() == CancelReason::kShutdown) {
    return "the server is shutting down";
  }
  if (io.stuck) return "the sandbox did not confirm the end of its interpreter";
  if (io.oom_killed) return "its interpreter passed its memory limit and was killed";
  if (io.ended_by & wire::kExitedCpuBound) {
    return "its interpreter, threads and children included, used more CPU than its cell's "
           "bound (what it had used, plus the cell's timeout and " +
           std::to_string(sandbox::limits::kCpuSlackS) + " s), so the sandbox ended it";
  }
  if (io.ended_by & wire::kExitedHeldProcesses) {
    return "the sessions together held more than half of MCP_EXEC_MAX_PROCESSES (" +
           std::to_string(config_.max_processes / 2) +
           " processes and threads beyond their interpreters) and this one held the most, so "
           "the sandbox ended it";
  }
  if (!io.exited) return "its interpreter was killed";
  return "its interpreter " + DescribeStatus(io.wait_status);
}

// A session cell's outcome. While the interpreter lives, the cell's exit
// status and reason come from its end record (the session's own word about
// its own cell); its death, and how, from the zygote. The verdict is read
// on the first cell only: later cells run in an interpreter already locked
// down.
std::optional<Failed> Executor::SettleCell(RunIo& io, SessionRun& session) {
  RunOutcome& o = io.outcome;
  if (!io.cell_done || io.killed) {
    // The interpreter is gone, or going: it was killed.
    session.ended = WhyInterpreterEnded(io);
  }
  if (!io.cell_done) return Settle(io);  // the outcome of a run that ended
  if (session.cells == 0) {
    if (auto refused = CheckVerdict(io, "session")) {
      session.ended = "its interpreter could not be locked down";
      return refused;
    }
  }
  io.CollectOutput();
  o.exit_code = io.done.status & 0xFF;
  if (io.timed_out) {
    o.exit_code = -1;
    o.end = RunEnd::kTimeout;
  } else if (io.cancelled) {
    o.exit_code = -1;
    o.end = RunEnd::kCancelled;
  } else if ((io.done.reason == wire::kReasonMemory && o.exit_code == 1) ||
             zygote_.OomKills(CgroupOf(io.slot)) > io.oom_base) {
    // An uncaught MemoryError, or the kernel killed a process of the
    // session (a child, a worker) for memory during this cell.
    o.end = RunEnd::kMemory;
  } else if (io.done.reason == wire::kReasonFileSize && o.exit_code == 1) {
    o.end = RunEnd::kFileSize;
  }
  return std::nullopt;
}

void Executor::EndSession(SessionRun& session) {
  if (!session.started()) return;
  zygote_.Kill(session.run_id);
  session.active.reset();
  QueueCleanup({session.run_id, session.slot, std::exchange(session.workdir, std::string()), true});
  session.slot.reset();
}

std::optional<Failed> Executor::AcquireSlot(CancelToken& cancel) {
  // A cancelled call leaves the queue at once: the token wakes the scheduler.
  cancel.OnCancel([this] { scheduler_.Wake(); });
  bool acquired = scheduler_.Acquire([&] { return cancel.cancelled(); });
  cancel.OnCancel(nullptr);
  if (acquired) return std::nullopt;
  if (cancel.reason() == CancelReason::kShutdown) {
    return Failed{RunFailure::kShutdown,
                  "the server is shutting down; this call was still queued and did not run"};
  }
  return Failed{RunFailure::kCancelled, "the run was cancelled before it started"};
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

std::optional<Failed> Executor::Handover(uint64_t run_id, const RunRequest& req,
                                         const std::string& workdir, RunFds& fds,
                                         const std::shared_ptr<RunSlot>& slot,
                                         int64_t session_cpu_s) {
  wire::RunParams params{};
  snprintf(params.workdir, sizeof params.workdir, "%s", workdir.c_str());
  params.timeout_s = req.timeout_s;
  params.session_cpu_s = session_cpu_s;
  std::string launch_error;
  if (!zygote_.Launch(run_id, params, fds.RunnerEnds().data(), slot, &launch_error)) {
    return Failed{RunFailure::kSandboxUnavailable, launch_error};
  }
  fds.CloseRunnerEnds();
  if (req.stdin_data.empty()) fds.in_w.Reset();
  return std::nullopt;
}

// The outcome from the trusted side: the verdict the runner wrote before the
// code ran, and the wait status the zygote reaped. Returns a tool error
// message when the run never really started.
std::optional<Failed> Executor::CheckVerdict(RunIo& io, const char* what) {
  const wire::LockdownVerdict* v = io.status.verdict();
  if (!v) {
    std::string how = !io.exited ? "it was ended before its lockdown finished"
                      : WIFSIGNALED(io.wait_status)
                          ? "it died by signal " + std::to_string(WTERMSIG(io.wait_status))
                          : "it exited with status " + std::to_string(WEXITSTATUS(io.wait_status));
    return Failed{RunFailure::kStartFailed, "the sandbox could not start this " +
                                                std::string(what) + ": " + how +
                                                " before its lockdown finished"};
  }
  if (!v->ok) {
    return Failed{RunFailure::kLockdownRefused,
                  "the sandbox could not lock this " + std::string(what) + " down: " + v->error};
  }
  io.outcome.lockdown_us = v->lockdown_us;
  io.outcome.lockdown_ahead_us = v->ahead_us;
  return std::nullopt;
}

std::optional<Failed> Executor::Settle(RunIo& io) {
  RunOutcome& o = io.outcome;
  if (io.lost) return Failed{io.lost_cause, io.lost_reason};
  if (io.stuck) {
    return Failed{RunFailure::kSandboxStuck,
                  "the sandbox did not confirm the end of this run within 5 s of killing it"};
  }
  // A later cell of a session runs in an interpreter locked down before the
  // first one ran: only a run's first code has a verdict to check.
  if (!(io.session && io.session->cells > 0)) {
    if (auto refused = CheckVerdict(io, "run")) return refused;
  }
  io.CollectOutput();
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
  } else if (io.status.note() == wire::kReasonFileSize && o.exit_code == 1) {
    // An uncaught OSError EFBIG: a write past the disk limit.
    o.end = RunEnd::kFileSize;
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

std::string Executor::Fail(uint64_t run_id, const RunRequest& req, const Failed& f,
                           const RunOutcome& o, int cell) {
  Report(run_id, req, o, &f, cell);
  return f.message;
}

void Executor::Report(uint64_t run_id, const RunRequest& req, const RunOutcome& o,
                      const Failed* failed, int cell) {
  const bool timed_out = o.end == RunEnd::kTimeout;
  log::Info("run", {{"run_id", run_id},
                    {"cell", cell},
                    {"exit_code", o.exit_code},
                    {"duration_ms", o.duration_ms},
                    {"queue_ms", o.queue_ms},
                    {"stdout_bytes", o.stdout_data.size()},
                    {"stderr_bytes", o.stderr_data.size()},
                    {"output_bytes", o.output_bytes},
                    {"truncated", o.truncated},
                    {"timed_out", timed_out},
                    {"signal", o.signal},
                    {"reason", failed ? RunFailureName(failed->cause) : RunEndName(o.end)},
                    {"code_bytes", req.code.size()},
                    {"stdin_bytes", req.stdin_data.size()},
                    {"lockdown_us", failed ? -1 : o.lockdown_us},
                    {"lockdown_ahead_us", failed ? -1 : o.lockdown_ahead_us}});
  if (!metrics_) return;
  if (failed) {
    metrics_->RecordFailure(RunFailureName(failed->cause));
    return;
  }
  std::string outcome = o.end != RunEnd::kExited ? RunEndName(o.end)
                        : o.exit_code != 0       ? "error"
                                                 : "ok";
  metrics_->RecordRun(outcome, o.duration_ms / 1000.0, o.queue_ms / 1000.0);
}

}  // namespace mcpexec
