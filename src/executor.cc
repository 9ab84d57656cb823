#include "executor.h"

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

#include "fs_util.h"
#include "sandbox/layers.h"
#include "utf8.h"
#include "log.h"

namespace mcpexec {

using Clock = std::chrono::steady_clock;

namespace {

constexpr uid_t kSandboxUid = sandbox::RunLimits{}.sandbox_uid;
constexpr gid_t kSandboxGid = sandbox::RunLimits{}.sandbox_gid;

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
    case SIGSYS: return "seccomp";  // a call the policy kills on
    case SIGXCPU: return "cpu";
    case SIGXFSZ: return "file_size";
    default: return "signal";
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
    *error = "MCP_EXEC_WORKDIR_ROOT " + config_.workdir_root + " is not a usable directory: " +
             strerror(errno);
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
      // The runner has reported (or was killed): its teardown ends with the
      // zygote reaping it. Bounded: a lost zygote ends every run it had.
      std::unique_lock<std::mutex> slot_lock(c.slot->mu);
      if (!c.slot->cv.wait_for(slot_lock, std::chrono::seconds(10),
                               [&] { return c.slot->exited || c.slot->lost; })) {
        slot_lock.unlock();
        zygote_.Kill(c.run_id);
        slot_lock.lock();
        c.slot->cv.wait_for(slot_lock, std::chrono::seconds(10),
                            [&] { return c.slot->exited || c.slot->lost; });
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

std::variant<ExecResult, std::string> Executor::Run(const ExecRequest& req, CancelToken& cancel) {
  auto queued_at = Clock::now();
  if (!scheduler_.Acquire([&] { return cancel.cancelled(); })) {
    return std::string("the run was cancelled before it started");
  }
  // From here on the slot is ours until the answer is ready.
  ExecResult result;
  result.queue_ms = Millis(Clock::now() - queued_at);
  uint64_t run_id = next_run_id_++;

  auto fail_early = [&](const std::string& what) -> std::variant<ExecResult, std::string> {
    scheduler_.Release();
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
  Fd in_r, in_w, out_r, out_w, err_r, err_w, st_r, st_w;
  Fd code_fd(MakeCodeMemfd(req.code));
  if (!MakePipe(&in_r, &in_w) || !MakePipe(&out_r, &out_w) || !MakePipe(&err_r, &err_w) ||
      !MakePipe(&st_r, &st_w) || code_fd.fd < 0) {
    RemoveTree(workdir);
    return fail_early(std::string("pipes: ") + strerror(errno));
  }
  for (int fd : {in_w.fd, out_r.fd, err_r.fd, st_r.fd}) fcntl(fd, F_SETFL, O_NONBLOCK);

  auto slot = std::make_shared<RunSlot>();
  slot->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  wire::RunParams params{};
  snprintf(params.workdir, sizeof params.workdir, "%s", workdir.c_str());
  params.timeout_s = req.timeout_s;
  int child_fds[wire::kRunFdCount] = {in_r.fd, out_w.fd, err_w.fd, st_w.fd, code_fd.fd};

  auto started_at = Clock::now();
  const int64_t started_realtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::system_clock::now().time_since_epoch()).count();
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_starts_.insert(started_realtime_ns);
  }
  std::string launch_error;
  auto run_over = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    active_starts_.erase(active_starts_.find(started_realtime_ns));
  };
  if (!zygote_.Launch(run_id, params, child_fds, slot, &launch_error)) {
    run_over();
    RemoveTree(workdir);
    close(slot->wake_fd);
    scheduler_.Release();
    return launch_error;
  }
  // The runner holds its own copies now; ours would keep the pipes open.
  in_r.Reset(), out_w.Reset(), err_w.Reset(), st_w.Reset(), code_fd.Reset();

  const auto deadline = started_at + std::chrono::seconds(req.timeout_s);
  Clock::time_point grace_deadline{};
  bool killed = false, cancelled = false, lost = false;
  std::string lost_reason;
  bool reported = false;
  // exit status, reason, lockdown µs on the request path and ahead of it
  int32_t report[4] = {0, wire::kReasonNone, 0, 0};
  std::string status_buf;
  size_t stdin_off = 0;
  int64_t budget = config_.max_output_bytes;
  bool stdout_open = true, stderr_open = true, status_open = true;
  if (req.stdin_data.empty()) in_w.Reset();

  auto kill_run = [&] {
    if (!killed) zygote_.Kill(run_id);
    killed = true;
    grace_deadline = Clock::now() + std::chrono::seconds(5);
  };
  auto drain = [&](int fd, std::string* into, bool* open) {
    char buf[65536];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) {
        result.output_bytes += n;
        int64_t keep = std::min<int64_t>(n, budget);
        if (keep > 0) into->append(buf, keep), budget -= keep;
        if (keep < n) result.truncated = true;  // read on and drop: never block the writer
        continue;
      }
      if (n == 0) *open = false;
      if (n < 0 && errno == EINTR) continue;
      return;
    }
  };

  while (stdout_open || stderr_open || (status_open && !reported)) {
    auto now = Clock::now();
    if (!killed && now >= deadline) {
      result.timed_out = true;
      kill_run();
    }
    if (killed && now >= grace_deadline) break;  // the tree is dead; stop waiting on stragglers
    auto until = killed ? grace_deadline : deadline;
    int timeout_ms = static_cast<int>(std::max<int64_t>(0, Millis(until - now)) + 1);

    pollfd p[6];
    int np = 0;
    int i_out = -1, i_err = -1, i_st = -1, i_in = -1;
    if (stdout_open) p[i_out = np++] = {out_r.fd, POLLIN, 0};
    if (stderr_open) p[i_err = np++] = {err_r.fd, POLLIN, 0};
    if (status_open) p[i_st = np++] = {st_r.fd, POLLIN, 0};
    if (in_w.fd >= 0) p[i_in = np++] = {in_w.fd, POLLOUT, 0};
    int i_cancel = np;
    p[np++] = {cancel.fd(), POLLIN, 0};
    int i_wake = np;
    p[np++] = {slot->wake_fd, POLLIN, 0};
    int rc = poll(p, np, timeout_ms);
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;

    if (i_out >= 0 && p[i_out].revents) drain(out_r.fd, &result.stdout_data, &stdout_open);
    if (i_err >= 0 && p[i_err].revents) drain(err_r.fd, &result.stderr_data, &stderr_open);
    if (i_st >= 0 && p[i_st].revents) {
      char buf[16];
      ssize_t n = read(st_r.fd, buf, sizeof buf);
      if (n > 0) status_buf.append(buf, n);
      if (n == 0) status_open = false;
      if (status_buf.size() >= sizeof report && !reported) {
        memcpy(report, status_buf.data(), sizeof report);
        reported = true;
      }
    }
    if (i_in >= 0 && p[i_in].revents) {
      if (p[i_in].revents & (POLLERR | POLLHUP)) {
        in_w.Reset();  // the code closed stdin or exited: what it did not read is dropped
      } else {
        ssize_t n = write(in_w.fd, req.stdin_data.data() + stdin_off, req.stdin_data.size() - stdin_off);
        if (n > 0) stdin_off += n;
        if ((n < 0 && errno != EAGAIN && errno != EINTR) || stdin_off == req.stdin_data.size()) {
          in_w.Reset();  // EOF after the given bytes
        }
      }
    }
    if (p[i_cancel].revents && !cancelled) {
      cancelled = true;
      kill_run();
    }
    if (p[i_wake].revents) {
      uint64_t v;
      (void)!read(slot->wake_fd, &v, sizeof v);
      std::lock_guard<std::mutex> lock(slot->mu);
      if (slot->lost && !lost) {
        lost = true;
        lost_reason = slot->lost_reason;
        break;
      }
    }
  }
  in_w.Reset();
  result.duration_ms = Millis(Clock::now() - started_at);
  run_over();

  if (!lost && !reported) {
    // No report: the runner died by a signal (or was killed). Its wait status
    // comes from the zygote.
    std::unique_lock<std::mutex> lock(slot->mu);
    slot->cv.wait_for(lock, std::chrono::seconds(10), [&] { return slot->exited || slot->lost; });
    if (slot->lost) lost = true, lost_reason = slot->lost_reason;
    if (slot->exited) {
      int ws = slot->wait_status;
      if (WIFSIGNALED(ws)) {
        result.signal = WTERMSIG(ws);
        result.exit_code = -1;
      } else if (WIFEXITED(ws)) {
        result.exit_code = WEXITSTATUS(ws);
      }
    } else if (!lost) {
      result.exit_code = -1;
    }
  } else if (reported) {
    result.exit_code = report[0] & 0xFF;
  }
  if (result.timed_out) {
    result.exit_code = -1;
    result.reason = "timeout";
  } else if (cancelled) {
    result.exit_code = -1;
    result.reason = "cancelled";
  } else if (reported && report[1] == wire::kReasonMemory) {
    result.reason = "memory";
  } else if (result.signal) {
    result.reason = ReasonForSignal(result.signal);
  }
  if (reported && report[1] == wire::kReasonLockdown) {
    // Not the code's doing: the run never started. Say so as a tool error.
    lost = true;
    lost_reason = RepairUtf8(result.stderr_data);
    while (!lost_reason.empty() && lost_reason.back() == '\n') lost_reason.pop_back();
  }

  {
    std::lock_guard<std::mutex> lock(mu_);
    cleanups_.push_back({run_id, slot, workdir});
  }
  cv_.notify_all();
  // The slot goes back with the answer: a client that calls again as soon as
  // it has its result must find room. Teardown goes on in the background.
  scheduler_.Release();

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
                    {"reason", lost ? "lost" : result.reason},
                    {"code_bytes", req.code.size()},
                    {"stdin_bytes", req.stdin_data.size()},
                    {"lockdown_us", reported ? report[2] : -1},
                    {"lockdown_ahead_us", reported ? report[3] : -1}});
  if (metrics_) {
    std::string outcome = lost                              ? "lost"
                          : result.timed_out                ? "timeout"
                          : !result.reason.empty() && result.reason != "signal" ? result.reason
                          : result.signal                   ? "signal"
                          : result.exit_code != 0           ? "error"
                                                            : "ok";
    metrics_->RecordRun(outcome, result.duration_ms / 1000.0, result.queue_ms / 1000.0);
  }
  if (lost) {
    zygote_.Kill(run_id);
    return lost_reason;
  }
  return result;
}

}  // namespace mcpexec
