#include "supervisor/executor.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
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
#include "ipc/control.h"
#include "ipc/run_bundle.h"
#include "ipc/status.h"
#include "model/run_limits.h"
#include "sandbox/layers.h"
#include "sandbox/limits.h"
#include "supervisor/results.h"
#include "supervisor/run_io.h"
#include "supervisor/status_reader.h"
#include "supervisor/tool_channel.h"

namespace mcpexec {

using Clock = std::chrono::steady_clock;

namespace {

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

}  // namespace

Executor::Executor(const Config& config, SandboxLink& zygote, Scheduler& scheduler,
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
  // What servers killed without a chance to clean up (SIGKILL, the OOM
  // killer) left here: their folders' locks are free. Each live server
  // holds its own.
  const std::vector<std::string> swept = SweepUnheldDirs(
      config_.workdir_root, {"mcp-exec-", "mcp-exec-resources-"}, std::chrono::seconds(10));
  if (!swept.empty()) {
    log::Info("swept", {{"folders", swept.size()},
                        {"why",
                         "left by servers that ended without cleaning up (no live "
                         "server held them)"}});
  }
  base_dir_ = MakePrivateDir(config_.workdir_root, "mcp-exec-");
  if (base_dir_.empty()) {
    *error = "mkdtemp(" + config_.workdir_root + "/mcp-exec-XXXXXX): " + strerror(errno);
    return false;
  }
  if (!HoldDir(base_dir_, &base_hold_)) {
    *error = "the runs' folder's lock " + base_dir_ + "/.lock: " + strerror(errno);
    return false;
  }
  chmod(base_dir_.c_str(), 0711);  // runners may run as another uid: they traverse, never list
  if (config_.resource_store_mb > 0) {
    resources_ = ResourceStore::Create(config_.workdir_root, config_.resource_store_mb << 20,
                                       std::chrono::seconds(config_.resource_ttl_s),
                                       config_.resource_store_keep_free_mb << 20, error);
    if (!resources_) return false;
    resources_->SetReclaim([this] { WaitCleanups(std::chrono::seconds(2)); });
  }
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
    cleaning_ = true;
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
    WriteRunLine(c);
    if (!RemoveTree(c.workdir)) {
      log::Error("workdir_not_removed", {{"run_id", c.run_id}, {"errno", strerror(errno)}});
    }
    if (shared_dev_shm_) PurgeDevShm();
    c.slot->CloseWake();
    lock.lock();
    cleaning_ = false;
    cleaned_cv_.notify_all();
  }
}

// A one-shot run's line, once its processes are reaped (the zygote says so
// right after it reaps them; a run whose end never came is not waited for).
void Executor::WriteRunLine(Cleanup& c) {
  if (c.line.is_null()) return;
  std::unique_lock<std::mutex> lock(c.slot->mu);
  if (c.slot->exited) {
    c.slot->cv.wait_for(lock, kKillGrace, [&] { return c.slot->torn_down || c.slot->lost; });
  }
  if (c.slot->torn_down && c.line.contains("trace_us")) {
    c.line["trace_us"]["torn_down"] =
        std::chrono::duration_cast<std::chrono::microseconds>(c.slot->torn_down_at - c.received)
            .count();
  }
  lock.unlock();
  log::Info("run", c.line);
}

void Executor::WaitCleanups(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cleaned_cv_.wait_for(lock, timeout, [&] { return cleanups_.empty() && !cleaning_; });
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
  uid_t uid = geteuid() == 0 ? static_cast<uid_t>(config_.sandbox_uid) : geteuid();
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
  resources_.reset();
}

bool Executor::RunFds::Make(const RunRequest& req) {
  code = MakeCodeMemfd(ipc::EncodeRunBundle(req.code, req.files));
  if (!code || !MakePipe(&in_r, &in_w, O_CLOEXEC) || !MakePipe(&out_r, &out_w, O_CLOEXEC) ||
      !MakePipe(&err_r, &err_w, O_CLOEXEC) || !MakePipe(&st_r, &st_w, O_CLOEXEC) ||
      !MakePipe(&res_r, &res_w, O_CLOEXEC)) {
    return false;
  }
  // The tool channel: a stream socket pair, never a network socket. Without
  // upstreams Execute closes our end before the run gets its own (EPIPE).
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return false;
  tools.Reset(pair[0]);
  tools_run.Reset(pair[1]);
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

// What one run or cell holds while it goes: its id, its fds, and for a
// one-shot run its own working directory, slot and place in the purge's
// record (a session keeps those in its SessionRun).
struct Executor::Launch {
  uint64_t run_id = 0;
  RunFds fds;
  std::shared_ptr<RunSlot> slot;
  Workdir workdir;
  std::optional<ActiveRun> active;
};

std::variant<RunOutcome, std::string> Executor::Run(const RunRequest& req, CancelToken& cancel,
                                                    const Progress& progress) {
  return Execute(nullptr, req, cancel, progress, std::chrono::milliseconds(0));
}

std::variant<RunOutcome, std::string> Executor::RunCell(SessionRun& session, const RunRequest& req,
                                                        CancelToken& cancel,
                                                        const Progress& progress,
                                                        std::chrono::milliseconds interrupt_grace) {
  return Execute(&session, req, cancel, progress, interrupt_grace);
}

// The one sequence of a one-shot run (session null) and of a session's cell.
std::variant<RunOutcome, std::string> Executor::Execute(SessionRun* session, const RunRequest& req,
                                                        CancelToken& cancel,
                                                        const Progress& progress,
                                                        std::chrono::milliseconds interrupt_grace) {
  const auto queued_at = Clock::now();
  Launch l;
  l.run_id = session ? session->run_id : next_run_id_++;
  if (auto refused = AcquireSlot(cancel)) return Fail(l.run_id, req, *refused);
  // From here on the slot is ours until the answer is ready: it goes back
  // with the answer, so a client that calls again at once finds room. An
  // idle session holds none: only its cells do.
  SlotGuard slot_guard(scheduler_);
  RunOutcome outcome;
  outcome.queue_ms = Millis(Clock::now() - queued_at);
  if (auto error = Prepare(session, req, l)) {
    log::Error("run_not_started", {{"run_id", l.run_id}, {"error", *error}});
    if (session) session->ended = "its interpreter could not be started";
    return Fail(l.run_id, req, {RunFailure::kInternal, "internal error: " + *error});
  }
  const int64_t oom_base = session ? zygote_.OomKills(CgroupOf(*l.slot)) : 0;
  const auto started_at = Clock::now();  // a wait for a restarting sandbox counts
  // Without upstreams the channel's other end is closed before the run has
  // its end: what it sends meets EPIPE, from its first instruction on.
  if (!tools_) l.fds.tools.Reset();
  if (auto refused = Hand(session, req, l)) {
    if (session) session->ended = "its interpreter could not be reached";
    return Fail(l.run_id, req, *refused);
  }
  const auto handed_at = Clock::now();

  // The tool channel is read by the run's loop from the moment the runner
  // has its end.
  std::optional<ToolChannel> channel;
  if (tools_) {
    channel.emplace(tools_, std::move(l.fds.tools),
                    started_at + std::chrono::seconds(req.timeout_s),
                    ToolChannelLimits{config_.max_tool_calls, config_.max_tool_result_bytes,
                                      config_.max_tool_calls_in_flight},
                    metrics_, *tool_pool_);
  }
  RunIo io(l.run_id, req, cancel, *l.slot, l.fds, outcome, started_at, config_, progress,
           resources_.get());
  io.session = session;
  io.tools = channel ? &*channel : nullptr;
  io.interrupt_grace = interrupt_grace;
  io.oom_base = oom_base;
  PumpUntilEnded(io);
  if (session) CountAfterCell(io);
  outcome.duration_ms = Millis(Clock::now() - io.started_at);
  if (channel) {
    channel->Stop();
    outcome.tool_calls = channel->calls();
  }
  if (l.active) l.active->End();
  std::optional<Failed> failed = Settle(io);
  Trace(io, queued_at, handed_at, &outcome.trace);
  const Failed* f = failed ? &*failed : nullptr;
  if (session) {
    Report(l.run_id, req, outcome, f, ++session->cells);
  } else {
    if (failed) zygote_.Kill(l.run_id);  // whatever is left of it
    QueueCleanup({l.run_id, l.slot, l.workdir.Release(), false,
                  Record(l.run_id, req, outcome, f, 0), queued_at});
  }
  if (failed) return failed->message;
  return outcome;
}

void Executor::Trace(const RunIo& io, Clock::time_point received, Clock::time_point handed,
                     RunTrace* t) {
  const auto since = [&](Clock::time_point at) -> int64_t {
    if (at == Clock::time_point{}) return -1;
    return std::chrono::duration_cast<std::chrono::microseconds>(at - received).count();
  };
  t->handed_us = since(handed);
  t->drained_us = since(io.drained_at);
  t->status_known_us = since(io.status_at);
  t->answered_us = since(Clock::now());
  // The runner's clock is CLOCK_MONOTONIC, steady_clock's here.
  const auto ns = [](Clock::time_point at) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
  };
  ipc::RunNote note{};
  if (io.session || !io.status.trace(ns(handed), ns(Clock::now()), &note)) return;
  const auto at = [](int64_t n) { return Clock::time_point(std::chrono::nanoseconds(n)); };
  t->code_started_us = since(at(note.code_started_ns));
  t->code_finished_us = since(at(note.code_finished_ns));
  t->faults_before = note.faults_before;
  t->faults_during = note.faults_during;
}

// A one-shot run's working directory, slot and fds; a cell's fds, and its
// session's interpreter's directory and slot on the first.
std::optional<std::string> Executor::Prepare(SessionRun* session, const RunRequest& req,
                                             Launch& l) {
  std::optional<std::string> error;
  if (!session) {
    error = PrepareWorkdir(&l.workdir);
    if (!error) l.slot = RunSlot::Make();
    if (!error && !l.slot) error = std::string("eventfd: ") + strerror(errno);
    if (!error) l.active.emplace(*this);
  } else if (!session->started()) {
    Workdir workdir;
    error = PrepareWorkdir(&workdir);
    session->slot = error ? nullptr : RunSlot::Make();
    if (!error && !session->slot) error = std::string("eventfd: ") + strerror(errno);
    session->run_id = next_run_id_++;
    session->workdir = workdir.Release();
    session->active = std::make_shared<ActiveRun>(*this);
  }
  if (session) {
    l.run_id = session->run_id;
    l.slot = session->slot;
  }
  if (!error && !l.fds.Make(req)) error = std::string("pipes: ") + strerror(errno);
  return error;
}

// Hands the run to the zygote: a one-shot run or a session's first cell is
// launched (a runner forked for it); a later cell goes to its interpreter.
std::optional<Failed> Executor::Hand(SessionRun* session, const RunRequest& req, Launch& l) {
  ipc::RunParams params{};
  params.timeout_s = req.timeout_s;
  params.session_cpu_s = session ? session->cpu_budget_s : 0;
  std::string error;
  bool sent;
  if (session && session->cells > 0) {
    sent = zygote_.SendCell(l.run_id, params, l.fds.RunnerEnds().data(), &error);
  } else {
    const std::string& workdir = session ? session->workdir : l.workdir.path();
    snprintf(params.workdir, sizeof params.workdir, "%s", workdir.c_str());
    sent = zygote_.Launch(l.run_id, params, l.fds.RunnerEnds().data(), l.slot, &error);
  }
  if (!sent) return Failed{RunFailure::kSandboxUnavailable, error};
  l.fds.CloseRunnerEnds();
  if (req.stdin_data.empty()) l.fds.in_w.Reset();
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
  const bool stuck = io.failed && io.failed->cause == RunFailure::kSandboxStuck;
  if (io.failed && !stuck) return "the sandbox restarted and took its interpreter with it";
  if (io.interrupt_ignored) {
    return "its cell did not stop within " + std::to_string(io.interrupt_grace.count()) +
           " ms of KeyboardInterrupt (after " +
           (io.cause == StopCause::kTimeout
                ? "its " + std::to_string(io.req.timeout_s) + " s timeout"
                : std::string("a cancellation")) +
           "), so its interpreter was killed";
  }
  if (io.cause == StopCause::kShutdown) return "the server is shutting down";
  if (stuck) return "the sandbox did not confirm the end of its interpreter";
  if (!io.reaped) return "its interpreter was killed";
  if (io.reaped->oom_killed) return "its interpreter passed its memory limit and was killed";
  if (io.reaped->ended_by & ipc::kExitedCpuBound) {
    return "its interpreter, threads and children included, used more CPU than its cell's "
           "bound (what it had used, plus the cell's timeout and " +
           std::to_string(sandbox::limits::kCpuSlackS) + " s), so the sandbox ended it";
  }
  if (io.reaped->ended_by & ipc::kExitedHeldProcesses) {
    return "the sessions together held more than half of MCP_EXEC_MAX_PROCESSES (" +
           std::to_string(SessionsHeldBound(config_.max_processes)) +
           " processes and threads beyond their interpreters) and this one held the most, so "
           "the sandbox ended it";
  }
  if (io.reaped->ended_by & ipc::kExitedRunsHeldProcesses) return RunsHeldText();
  return "its interpreter " + DescribeStatus(io.reaped->wait_status);
}

std::string Executor::RunsHeldText() const {
  return "while other runs were going, all runs together held more than three quarters of "
         "MCP_EXEC_MAX_PROCESSES (" +
         std::to_string(RunsHeldBound(config_.max_processes)) +
         " processes and threads beyond their interpreters) and this one held the most, so the "
         "sandbox ended it";
}

// A cell that ended with its interpreter alive: what the sessions hold now
// is counted by the zygote before the answer (issue 36, point 9), so that
// children a cell left behind are bounded before the next run forks. When
// the count ends this session, its end (the reap, and so its processes
// gone) is awaited too, and the answer says why it ended.
void Executor::CountAfterCell(RunIo& io) {
  if (!io.cell_end || io.reaped || io.failed || io.phase == RunIo::Phase::kKilling) return;
  std::unique_lock<std::mutex> lock(io.slot.mu);
  const uint64_t base = io.slot.counted;
  lock.unlock();
  if (!zygote_.Count(io.run_id)) return;  // the zygote is gone: its restart says so
  lock.lock();
  const auto answered = [&] { return io.slot.counted > base || io.slot.exited || io.slot.lost; };
  if (!io.slot.cv.wait_for(lock, kKillGrace, answered)) {
    log::Warn("count_unanswered", {{"run_id", io.run_id}});
    return;
  }
  if (io.slot.count_ended && io.slot.counted > base) {
    io.slot.cv.wait_for(lock, kKillGrace, [&] { return io.slot.exited || io.slot.lost; });
  }
  if (io.slot.exited) {
    io.reaped = RunIo::Reaped{io.slot.wait_status, io.slot.oom_killed, io.slot.ended_by};
  }
}

// The end of a run or cell from the trusted side. A one-shot run's exit
// status is the zygote's word; a cell's, while its interpreter lives, comes
// from its end record (the session's own word about its own cell), and the
// interpreter's death, if it died, from the zygote. The lockdown verdict is
// read for a run's first code only: later cells run in an interpreter
// already locked down. Returns a tool error when there is no result.
std::optional<Failed> Executor::Settle(RunIo& io) {
  SessionRun* session = io.session;
  if (session && (!io.cell_end || io.reaped || io.phase == RunIo::Phase::kKilling)) {
    session->ended = WhyInterpreterEnded(io);  // the interpreter is gone, or going
  }
  if (io.failed) return io.failed;
  if (!session || session->cells == 0) {
    const bool cell = session && io.cell_end;
    if (auto refused = CheckVerdict(io, cell ? "session" : "run")) {
      if (cell) session->ended = "its interpreter could not be locked down";
      return refused;
    }
  }
  io.CollectOutput();
  RunOutcome& o = io.outcome;
  const bool stopped = io.cause != StopCause::kNone;
  uint8_t note = 0;
  bool memory_killed = false;
  if (io.cell_end) {
    o.exit_code = io.cell_end->status & 0xFF;
    note = io.cell_end->reason;
    // The kernel killed a process of the session (a child, a worker) for
    // memory during this cell.
    memory_killed = !stopped && zygote_.OomKills(CgroupOf(io.slot)) > io.oom_base;
  } else {
    const int status = io.reaped ? io.reaped->wait_status : 0;
    if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
    o.exit_code = WIFSIGNALED(status) ? -1 : WEXITSTATUS(status);
    note = io.status.note();
    memory_killed = io.reaped && io.reaped->oom_killed;  // the run's cgroup
  }
  if (stopped) o.exit_code = -1;
  // The zygote's kill for the processes it held ended the run only if a
  // signal did: a run that exited by itself first (a fork bomb that stopped
  // at the limit and returned) keeps its own end and exit code.
  const bool held =
      io.reaped && (io.reaped->ended_by & ipc::kExitedRunsHeldProcesses) && o.signal != 0;
  o.end = ClassifyEnd(io.cause, o.exit_code, o.signal, note, memory_killed, held);
  return std::nullopt;
}

// One classifier for runs and cells: the supervisor's cause first, then the
// zygote's word that it ended the run for the processes it held, the memory limit (the cgroup
// killed, or an uncaught MemoryError, what only Python knows, believed with exit 1), the disk limit
// (an uncaught OSError EFBIG), then the signal.
RunEnd Executor::ClassifyEnd(StopCause cause, int exit_code, int signal, uint8_t note,
                             bool memory_killed, bool held_processes) {
  switch (cause) {
    case StopCause::kTimeout:
      return RunEnd::kTimeout;
    case StopCause::kCancelled:
      return RunEnd::kCancelled;
    case StopCause::kShutdown:
      return RunEnd::kShutdown;
    case StopCause::kNone:
      break;
  }
  if (held_processes) return RunEnd::kProcesses;
  if (memory_killed || (note == ipc::kReasonMemory && exit_code == 1)) return RunEnd::kMemory;
  if (note == ipc::kReasonFileSize && exit_code == 1) return RunEnd::kFileSize;
  if (signal) return EndForSignal(signal);
  return RunEnd::kExited;
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
  if (geteuid() == 0 && chown(workdir->path().c_str(), static_cast<uid_t>(config_.sandbox_uid),
                              static_cast<gid_t>(config_.sandbox_uid)) != 0) {
    return std::string("chown(workdir): ") + strerror(errno);
  }
  return std::nullopt;
}

// The outcome from the trusted side: the verdict the runner wrote before the
// code ran, and the wait status the zygote reaped. Returns a tool error
// message when the run never really started.
std::optional<Failed> Executor::CheckVerdict(RunIo& io, const char* what) {
  const ipc::LockdownVerdict* v = io.status.verdict();
  if (!v) {
    const int status = io.reaped ? io.reaped->wait_status : 0;
    std::string how = !io.reaped ? "it was ended before its lockdown finished"
                      : WIFSIGNALED(status)
                          ? "it died by signal " + std::to_string(WTERMSIG(status))
                          : "it exited with status " + std::to_string(WEXITSTATUS(status));
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

nlohmann::json Executor::Record(uint64_t run_id, const RunRequest& req, const RunOutcome& o,
                                const Failed* failed, int cell) {
  const bool timed_out = o.end == RunEnd::kTimeout;
  const RunTrace& t = o.trace;
  nlohmann::json line = {{"run_id", run_id},
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
                         {"lockdown_ahead_us", failed ? -1 : o.lockdown_ahead_us}};
  if (t.handed_us >= 0) {
    line["trace_us"] = {{"handed", t.handed_us},
                        {"code_started", t.code_started_us},
                        {"code_finished", t.code_finished_us},
                        {"drained", t.drained_us},
                        {"status_known", t.status_known_us},
                        {"answered", t.answered_us},
                        {"torn_down", t.torn_down_us}};
    line["minor_faults"] = {{"before_code", t.faults_before}, {"during_code", t.faults_during}};
  }
  if (!metrics_) return line;
  if (failed) {
    metrics_->RecordFailure(RunFailureName(failed->cause));
    return line;
  }
  std::string outcome = o.end != RunEnd::kExited ? RunEndName(o.end)
                        : o.exit_code != 0       ? "error"
                                                 : "ok";
  metrics_->RecordRun(outcome, o.duration_ms / 1000.0, o.queue_ms / 1000.0);
  return line;
}

}  // namespace mcpexec
