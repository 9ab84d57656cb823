#include "supervisor/zygote_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "base/fs_util.h"
#include "base/log.h"
#include "ipc/proc_tree.h"
#include "ipc/zygote_args.h"
#include "sandbox/cgroups.h"
#include "sandbox/namespaces.h"
#include "supervisor/results.h"

namespace mcpexec {

// How long a run waits for a zygote (one restarting warms its interpreter,
// about a second here) before its call is refused.
constexpr int kReadyTimeoutMs = 60000;

std::shared_ptr<RunSlot> RunSlot::Make() {
  auto slot = std::make_shared<RunSlot>();
  slot->wake_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!slot->wake_) return nullptr;
  return slot;
}

void RunSlot::Notify() {
  cv.notify_all();
  if (wake_) {
    uint64_t one = 1;
    (void)!write(wake_.get(), &one, sizeof one);
  }
}

void RunSlot::CloseWake() {
  std::lock_guard<std::mutex> lock(mu);
  wake_.Reset();
}

std::vector<std::string> ZygoteEnvironment(const Config& config, const std::string& cache_dir) {
  std::vector<std::string> env = {
      "PATH=/usr/local/bin:/usr/bin:/bin",
      "LANG=C.UTF-8",
      "LC_ALL=C.UTF-8",
      "HOME=" + cache_dir,
      "MPLBACKEND=Agg",
      "MPLCONFIGDIR=" + cache_dir + "/matplotlib",
      // One thread per native pool: the zygote must stay single-threaded to
      // fork safely, and runs share the machine's cores with each other.
      "OPENBLAS_NUM_THREADS=1",
      "OMP_NUM_THREADS=1",
      "MKL_NUM_THREADS=1",
      "NUMEXPR_NUM_THREADS=1",
      "NUMEXPR_MAX_THREADS=1",
      "VECLIB_MAXIMUM_THREADS=1",
      "PYTHONDONTWRITEBYTECODE=1",
      // Each thread's malloc arena reserves 64 MiB of address space, which
      // the run's RLIMIT_AS counts: a thread pool would exhaust it unused.
      "MALLOC_ARENA_MAX=2",
  };
  // Not secrets: they select OpenBLAS kernels on CPUs where older builds
  // compute wrong results.
  for (const char* name : {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}) {
    if (const char* v = getenv(name)) env.push_back(std::string(name) + "=" + v);
  }
  return env;
}

ZygoteClient::ZygoteClient(const Config& config) : config_(config) {}

ZygoteClient::~ZygoteClient() { Shutdown(); }

ZygoteArgs ZygoteClient::ArgsFor(int ns_flags) const {
  ZygoteArgs a;
  a.supervisor = getpid();
  a.spares = SparesFor(config_.max_concurrent);
  a.namespaces = sandbox::namespaces::FlagNames(ns_flags);
  a.outer_uid = geteuid();
  a.outer_gid = getegid();
  a.limits = RunLimitsOf(config_);
  // A server started as another user cannot change its runs' uid: they are
  // its own, and so are the folders made for them (a tmpfs's owner must be
  // a uid its user namespace maps).
  if (a.outer_uid != 0) {
    a.limits.sandbox_uid = a.outer_uid;
    a.limits.sandbox_gid = a.outer_gid;
  }
  a.output = ResultLimitsFor(config_);
  a.huge_pages = config_.zygote_huge_pages;
  a.prefault = config_.spare_prefault;
  a.preload = config_.preload;
  for (const std::string& dir : config_.python_site) a.site += (a.site.empty() ? "" : ":") + dir;
  a.mounts = mounts::Format(config_.mounts);
  a.cgroup_version = cgroups_.version;
  a.cgroup_memory_dir = cgroups_.memory_dir;
  a.cgroup_pids_dir = cgroups_.pids_dir;
  a.cgroup_why_not_memory = cgroups_.why_not_memory;
  a.cgroup_why_not_pids = cgroups_.why_not_pids;
  return a;
}

bool ZygoteClient::SpawnLocked(std::string* error) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    *error = std::string("socketpair: ") + strerror(errno);
    return false;
  }
  UniqueFd ours(sv[0]), theirs(sv[1]);
  std::string cache = config_.workdir_root + "/mcp-exec-cache-" + std::to_string(geteuid());
  EnsureDir(cache, 0700);
  std::vector<std::string> env = ZygoteEnvironment(config_, cache);
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  if (!cgroups_detected_) {
    // Before any thread exists, like everything else here.
    cgroups_ = sandbox::cgroups::Detect();
    cgroups_detected_ = true;
  }
  // The first set of namespaces the kernel lets us clone into; one it lets
  // us clone but not finish is refused by the zygote (AwaitReadyMessage).
  std::vector<int> sets = sandbox::namespaces::FlagSets();
  pid_t pid = -1;
  int spawn_errno = 0;
  for (; ns_attempt_ < sets.size(); ++ns_attempt_) {
    int flags = sets[ns_attempt_];
    std::vector<std::string> args = ArgsFor(flags).ToArgv();
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // In the zygote's fd order: kZygoteControlFd, then the cgroup parents.
    int fds[3] = {theirs.get(), cgroups_.memory_fd, cgroups_.pids_fd};
    pid = sandbox::namespaces::SpawnWithFlags(flags, "/proc/self/exe", argv.data(), envp.data(),
                                              fds, 3);
    if (pid > 0) {
      ns_flags_ = flags;
      break;
    }
    spawn_errno = errno;
  }
  if (pid <= 0) {
    *error = std::string("clone(/proc/self/exe __zygote): ") + strerror(spawn_errno);
    return false;
  }
  control_ = std::make_shared<const UniqueFd>(std::move(ours));
  pid_ = pid;
  spawner_ = std::this_thread::get_id();
  return true;
}

bool ZygoteClient::SpawnedOnThisThread() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spawner_ == std::this_thread::get_id();
}

int ZygoteClient::AwaitReadyMessage(std::string* error) {
  std::shared_ptr<const UniqueFd> control = Control();
  if (!control) {
    *error = "the zygote's control socket is gone";
    return 0;
  }
  // Warm-up imports six packages; on a cold page cache that takes seconds.
  pollfd p{control->get(), POLLIN, 0};
  int rc;
  do {
    rc = poll(&p, 1, 180000);
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) {
    *error = "the zygote did not finish its warm-up within 180 s";
    return 0;
  }
  ipc::Header h;
  std::string payload;
  if (ipc::Receive(control->get(), &h, &payload, nullptr) <= 0) {
    *error = "the zygote exited during its warm-up (see its log lines above)";
    return 0;
  }
  if (h.type == ipc::Type::kFatal) {
    *error = "the zygote cannot serve: " + payload;
    return h.value == ipc::kFatalNamespaces ? -1 : 0;
  }
  if (h.type != ipc::Type::kReady) {
    *error = "unexpected first message from the zygote";
    return 0;
  }
  RuntimeReport report;
  try {
    report = ParseRuntimeReport(nlohmann::json::parse(payload));
  } catch (const std::exception& e) {
    *error = std::string("unreadable zygote report: ") + e.what();
    return 0;
  }
  std::lock_guard<std::mutex> lock(mu_);
  report_ = std::move(report);
  return 1;
}

void ZygoteClient::KillZygote() {
  std::lock_guard<std::mutex> lock(mu_);
  control_.reset();
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }
}

bool ZygoteClient::SpawnAndAwait(std::string* error, bool spawned) {
  for (;; spawned = false) {
    if (!spawned) {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutting_down_ || start_aborted_) {
        *error = "the server is shutting down";
        return false;
      }
      if (!SpawnLocked(error)) return false;
    }
    int r = AwaitReadyMessage(error);
    if (r == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      if (start_aborted_) {
        *error = "the server is shutting down";
        return false;  // the killed zygote is reaped by Shutdown()
      }
      ready_ = true;
      ++generation_;
      ready_cv_.notify_all();
      return true;
    }
    KillZygote();
    if (r == 0) return false;
    log::Warn("zygote_namespaces_refused",
              {{"namespaces", sandbox::namespaces::FlagNames(ns_flags_)}, {"error", *error}});
    ++ns_attempt_;  // the host refused these namespaces: try fewer
  }
}

bool ZygoteClient::Start(std::string* error) { return Spawn(error) && FinishStart(error); }

bool ZygoteClient::Spawn(std::string* error) {
  spawned_at_ = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  return SpawnLocked(error);
}

void ZygoteClient::AbortStart() {
  std::lock_guard<std::mutex> lock(mu_);
  if (generation_ > 0 || start_aborted_) return;  // a zygote was ready once
  start_aborted_ = true;
  if (pid_ > 0) kill(pid_, SIGKILL);
}

bool ZygoteClient::FinishStart(std::string* error) {
  const auto t0 = spawned_at_;
  if (!SpawnAndAwait(error, true)) return false;
  RuntimeReport report = this->report();
  nlohmann::json pk = nlohmann::json::object();
  for (auto& [name, version] : report.packages) pk[name] = version;
  log::Info("zygote_ready", {{"pid", zygote_pid()},
                             {"python", report.python_version},
                             {"packages", pk},
                             {"missing", report.missing},
                             {"preloaded", report.preloaded},
                             {"extras", report.extras},
                             {"image", report.image},
                             {"warmup_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now() - t0)
                                               .count()}});
  if (!reader_.joinable()) reader_ = std::thread([this] { ReaderLoop(); });
  return true;
}

bool ZygoteClient::WaitReady(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return ready_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
    return ready_ || shutting_down_;
  }) && ready_;
}

void ZygoteClient::FailAllRuns(const std::string& reason, RunFailure cause) {
  std::map<uint64_t, std::shared_ptr<RunSlot>> runs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    runs.swap(runs_);
  }
  for (auto& [id, slot] : runs) {
    std::lock_guard<std::mutex> lock(slot->mu);
    if (slot->exited) {
      // Its end was told; the zygote took whatever was left of it along.
      slot->MarkTornDown();
      slot->Notify();
      continue;
    }
    slot->lost = true;
    slot->lost_reason = reason;
    slot->lost_cause = cause;
    slot->Notify();
  }
}

void ZygoteClient::ReaderLoop() {
  for (;;) {
    std::shared_ptr<const UniqueFd> control = Control();
    ipc::Header h;
    std::string payload;
    if (control && ipc::Receive(control->get(), &h, &payload, nullptr) > 0) {
      Dispatch(h, payload);
      continue;
    }
    // The zygote is gone (or its socket broke).
    if (!BuryZygote()) return;
    Restart();
  }
}

void ZygoteClient::Dispatch(const ipc::Header& h, const std::string& payload) {
  std::shared_ptr<RunSlot> slot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(h.run_id);
    if (it == runs_.end()) return;
    slot = it->second;
    if (h.type == ipc::Type::kReaped || h.type == ipc::Type::kStartFailed) runs_.erase(it);
  }
  std::lock_guard<std::mutex> lock(slot->mu);
  if (h.type == ipc::Type::kStarted) {
    slot->cgroup = payload;  // (h.value, the run's pid, is the zygote's to use)
  } else if (h.type == ipc::Type::kExited) {
    slot->exited = true;
    slot->wait_status = static_cast<int>(h.value);
    slot->oom_killed = (h.reserved & ipc::kExitedOomKilled) != 0;
    slot->ended_by = h.reserved & ipc::kExitedByZygote;
  } else if (h.type == ipc::Type::kReaped) {
    slot->MarkTornDown();
  } else if (h.type == ipc::Type::kCounted) {
    ++slot->counted;
    slot->count_ended = h.value != 0;
  } else if (h.type == ipc::Type::kStartFailed) {
    slot->lost = true;
    slot->lost_reason = "the sandbox could not start this run: " + payload;
    slot->lost_cause = RunFailure::kStartFailed;
  }
  slot->Notify();
}

bool ZygoteClient::BuryZygote() {
  pid_t pid;
  bool shutting_down;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = false;
    control_.reset();  // closed once no send holds it
    pid = std::exchange(pid_, 0);
    shutting_down = shutting_down_;
  }
  int status = 0;
  if (pid > 0) {
    // On shutdown the zygote is busy killing every run's tree: let it.
    if (!shutting_down) kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  // Runners die with their zygote (parent-death signal); what they started
  // was re-parented to us (we are a subreaper): end it before going on.
  KillChildrenExcept(getpid(), {});
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  FailAllRuns(shutting_down ? "the server is shutting down; the run was ended"
                            : "the sandbox process died during this run and was restarted; "
                              "the run was lost",
              shutting_down ? RunFailure::kShutdown : RunFailure::kSandboxLost);
  if (shutting_down) return false;
  log::Error("zygote_died", {{"pid", pid},
                             {"exit_status", WIFEXITED(status) ? WEXITSTATUS(status) : -1},
                             {"signal", WIFSIGNALED(status) ? WTERMSIG(status) : 0}});
  restarts_++;
  return true;
}

void ZygoteClient::Restart() {
  for (int attempt = 0;; ++attempt) {
    std::string error;
    if (SpawnAndAwait(&error)) {
      log::Info("zygote_restarted", {{"pid", zygote_pid()}, {"attempt", attempt + 1}});
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutting_down_) return;
    }
    log::Error("zygote_restart_failed", {{"error", error}, {"attempt", attempt + 1}});
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::min(5000, 200 << std::min(attempt, 5))));
  }
}

bool ZygoteClient::Launch(uint64_t run_id, const ipc::RunParams& params, const int* fds,
                          std::shared_ptr<RunSlot> slot, std::string* error) {
  for (int attempt = 0;; ++attempt) {
    if (!WaitReady(kReadyTimeoutMs)) {
      *error = "the sandbox is not available (it is restarting or failed to start); try again";
      return false;
    }
    uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(mu_);
      runs_[run_id] = slot;
      generation = generation_;
    }
    if (SendControl({ipc::Type::kRun, 0, run_id, 0}, &params, sizeof params, fds,
                    ipc::kRunFdCount)) {
      return true;
    }
    int send_errno = errno;
    {
      std::lock_guard<std::mutex> lock(mu_);
      runs_.erase(run_id);
    }
    // The zygote died before the run reached it (its socket refused the
    // message), so nothing of the run happened: it goes, once, to the zygote
    // that replaces it instead of failing a call that only came too early.
    if (attempt == 0 && WaitNextZygote(generation, kReadyTimeoutMs)) continue;
    *error = std::string("could not reach the sandbox: ") + strerror(send_errno);
    return false;
  }
}

bool ZygoteClient::WaitNextZygote(uint64_t generation, int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return ready_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
    return (ready_ && generation_ != generation) || shutting_down_;
  }) && !shutting_down_;
}

bool ZygoteClient::SendControl(const ipc::Header& h, const void* payload, size_t len,
                               const int* fds, int nfds) {
  std::shared_ptr<const UniqueFd> control = Control();
  if (!control) {
    errno = ENOTCONN;
    return false;
  }
  std::lock_guard<std::mutex> lock(send_mu_);
  return ipc::Send(control->get(), h, payload, len, fds, nfds);
}

std::shared_ptr<const UniqueFd> ZygoteClient::Control() const {
  std::lock_guard<std::mutex> lock(mu_);
  return control_;
}

int64_t ZygoteClient::OomKills(const std::string& cgroup) const {
  std::lock_guard<std::mutex> lock(mu_);
  return sandbox::cgroups::OomKills(cgroups_, cgroup);
}

void ZygoteClient::Kill(uint64_t run_id) {
  SendControl({ipc::Type::kKill, 0, run_id, 0}, nullptr, 0, nullptr, 0);
}

void ZygoteClient::Interrupt(uint64_t run_id) {
  SendControl({ipc::Type::kInterrupt, 0, run_id, 0}, nullptr, 0, nullptr, 0);
}

bool ZygoteClient::Count(uint64_t run_id) {
  return SendControl({ipc::Type::kCount, 0, run_id, 0}, nullptr, 0, nullptr, 0);
}

bool ZygoteClient::SendCell(uint64_t run_id, const ipc::RunParams& params, const int* fds,
                            std::string* error) {
  if (SendControl({ipc::Type::kCell, 0, run_id, 0}, &params, sizeof params, fds,
                  ipc::kRunFdCount)) {
    return true;
  }
  *error = std::string("could not reach the sandbox: ") + strerror(errno);
  return false;
}

void ZygoteClient::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
    // Half-close: the zygote reads EOF, kills every runner and exits; our
    // reader then sees EOF too.
    if (control_) shutdown(control_->get(), SHUT_RDWR);
  }
  ready_cv_.notify_all();
  if (reader_.joinable()) reader_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (pid_ > 0) {
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }
  control_.reset();
  // The zygote and every run are gone: so are the runs' cgroups.
  sandbox::cgroups::RemoveParents(cgroups_);
  cgroups_ = {};
}

RuntimeReport ZygoteClient::report() const {
  std::lock_guard<std::mutex> lock(mu_);
  return report_;
}

bool ZygoteClient::private_mounts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (ns_flags_ & CLONE_NEWNS) != 0;
}

pid_t ZygoteClient::zygote_pid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pid_;
}

}  // namespace mcpexec
