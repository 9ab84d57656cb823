#include "zygote/zygote.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/unique_fd.h"
#include "embed/python.h"
#include "process/proc_tree.h"
#include "process/wire.h"
#include "process/zygote_args.h"
#include "sandbox/credentials.h"
#include "sandbox/fds.h"
#include "sandbox/limits.h"
#include "sandbox/lockdown.h"
#include "sandbox/namespaces.h"

namespace mcpexec {

namespace {

// How long the zygote waits before it tries again to fork the spares it
// lacks, when the last attempt failed or a spare died idle.
constexpr int kSpareRetryMs = 250;

// A runner forked in advance, waiting on its socket for a run: the fork of
// the warmed image (milliseconds) happens between requests, not in one.
struct Spare {
  pid_t pid;
  UniqueFd sock;       // its init's report socket, once the spare has a run
  std::string cgroup;  // its cgroup's name, "" without the cgroup layer
};

struct Zygote {
  int control = -1;
  int sigfd = -1;
  pid_t self = 0;
  sigset_t original_mask;
  // A live run: its top process (the run's init when runs have their own pid
  // namespace) and the socket its init reports the runner's wait status on.
  struct Run {
    uint64_t run_id;
    UniqueFd sock;
    std::string cgroup;
    bool reported = false;  // kExited already sent (the run's init reported first)
    // A session's: where its further cells go. The interpreter's end is
    // receive-only: nothing its code writes reaches the zygote.
    UniqueFd cells{};
    // A session's CPU bound, in clock ticks of the whole run (WatchSessions):
    // what it had used when its latest cell started, plus that cell's
    // timeout and the slack. 0: not a session.
    int64_t cpu_bound_ticks = 0;
    uint32_t ended_by = 0;  // kExited flags: the bound the zygote ended it for
  };
  uint64_t next_cgroup = 0;
  std::map<pid_t, Run> runners;
  std::deque<Spare> spares;
  std::vector<Spare> retired;  // spares killed unused, until reaped
  size_t want_spares = 1;
  std::map<std::string, int64_t> output_limits;  // the runtime's, by name
  // Retried on the next event or after kSpareRetryMs, never in a loop.
  bool spare_fork_failed = false;
  int prefault = 0;  // spares take common faults ahead: 1 the run's path, 2 also pandas
  sandbox::Sandbox sandbox;
};

void Die(const char* what) {
  // Before Python is up, stderr is the supervisor's stderr.
  fprintf(stderr,
          "{\"level\":\"error\",\"event\":\"zygote_fatal\",\"what\":\"%s\",\"errno\":\"%s\"}\n",
          what, strerror(errno));
  _exit(1);
}

void SendFatal(int control, const std::string& why) {
  wire::Header h{wire::Type::kFatal, 0, 0, 0};
  wire::Send(control, h, why.data(), std::min(why.size(), wire::kMaxPayload), nullptr, 0);
}

int CountTasks() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  off_t off = 0;
  for (;;) {
    ssize_t n = pread(fd, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, n);
    off += n;
  }
  return out;
}

// Runs first in every runner, right after the fork, before it knows its run.
// expected_parent: the zygote, or 1 for a runner under its own init (0: the
// parent lives in another pid namespace and is not visible).
void RunnerPrepare(const Zygote& z, pid_t expected_parent) {
  // The zygote's own descriptors are not the runner's business.
  close(z.control);
  close(z.sigfd);
  sigprocmask(SIG_SETMASK, &z.original_mask, nullptr);
  signal(SIGCHLD, SIG_DFL);
  // Own session: a terminal or the supervisor's process group never reaches
  // the run, and the run's signals to its group never reach us.
  setsid();
  // Everything the code starts stays in this subtree while the runner lives,
  // so the deadline can find and kill it even after setsid() or a double fork.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != expected_parent) _exit(127);
}

// This runner's lockdown: how far it got, and what it cost before and on
// the request's path (reported with its status).
sandbox::LockState g_lock;
int g_status_fd = -1;
int32_t g_lockdown_us = 0, g_lockdown_ahead_us = 0;

int32_t MicrosSince(const timespec& t0) {
  timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return static_cast<int32_t>((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
}

// The verdict on this runner's lockdown: the one record of the status pipe
// the supervisor trusts, so it is written before any of the caller's code
// runs. A runner that cannot deliver it does not run the code.
void WriteVerdict(bool ok, const std::string& error) {
  wire::LockdownVerdict v{};
  v.magic = wire::kVerdictMagic;
  v.ok = ok ? 1 : 0;
  v.lockdown_us = g_lockdown_us;
  v.ahead_us = g_lockdown_ahead_us;
  snprintf(v.error, sizeof v.error, "%s", error.c_str());
  ssize_t n;
  do {
    n = write(g_status_fd, &v, sizeof v);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof v)) _exit(125);
}

[[noreturn]] void Finish(int status, uint32_t reason) {
  fflush(nullptr);
  if (reason != wire::kReasonNone) {
    wire::RunNote note{wire::kNoteMagic, reason};
    (void)!write(g_status_fd, &note, sizeof note);
  }
  close(1);
  close(2);
  close(sandbox::fds::ResultsFd(g_status_fd));
  close(g_status_fd);
  _exit(status);
}

// with_cells: a session's first run, handed to a spare, also carries the
// socket its further cells will arrive on (last).
bool ParseRun(const std::string& payload, const std::vector<UniqueFd>& fds, wire::RunParams* params,
              bool with_cells = false) {
  if (payload.size() != sizeof(wire::RunParams)) return false;
  memcpy(params, payload.data(), sizeof *params);
  params->workdir[sizeof params->workdir - 1] = '\0';
  const bool session = params->session_cpu_s > 0;
  return fds.size() == wire::kRunFdCount + (with_cells && session ? 1 : 0);
}

// A session's cell gets its own CPU time: the soft limit is what the session
// used so far plus this cell's timeout and the slack, never above the
// session's whole budget (the hard limit, set by the lockdown). Between
// cells it stays there, so the session's own threads cannot spin for free.
void SetCellCpuLimit(int64_t timeout_s) {
  rusage ru{};
  rlimit rl{};
  if (getrusage(RUSAGE_SELF, &ru) != 0 || getrlimit(RLIMIT_CPU, &rl) != 0) return;
  auto used = static_cast<rlim_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1);
  rlim_t soft = used + static_cast<rlim_t>(timeout_s + sandbox::limits::kCpuSlackS);
  rl.rlim_cur = std::min(soft, rl.rlim_max);
  setrlimit(RLIMIT_CPU, &rl);
}

// The runtime's reason, as the wire says it.
uint32_t ReasonCode(const std::string& reason) {
  if (reason == "memory") return wire::kReasonMemory;
  if (reason == "file_size") return wire::kReasonFileSize;
  return wire::kReasonNone;
}

void WriteCellDone(int status, uint32_t reason) {
  wire::CellDone done{wire::kCellDoneMagic, status, reason};
  ssize_t n;
  do {
    n = write(g_status_fd, &done, sizeof done);
  } while (n < 0 && errno == EINTR);
}

// What a session's interpreter receives for its next cell.
struct CellWait {
  explicit CellWait(int s) : sock(s) {}
  int sock;
  wire::Header h{};
  std::string payload;
  std::vector<UniqueFd> fds;
  int r = 0;
};

void WaitForCell(void* arg) {
  auto* w = static_cast<CellWait*>(arg);
  w->r = wire::Receive(w->sock, &w->h, &w->payload, &w->fds);
}

// A session's interpreter after its lockdown: runs its first cell, then
// waits (the GIL released, so its threads go on) for the next on its socket,
// until the socket closes or the process is killed. Its fds are numbers from
// here on, as in RunnerExecute.
[[noreturn]] void SessionLoop(embed::RunInput input, int64_t timeout_s) {
  const int sock = sandbox::fds::SessionFd(g_status_fd);
  for (int cell = 1;; ++cell) {
    SetCellCpuLimit(timeout_s);
    embed::DropPendingInterrupt();
    std::string reason;
    int status = embed::RunCell(input, cell, &reason);
    fflush(nullptr);
    WriteCellDone(status, ReasonCode(reason));
    sandbox::fds::DetachCell(g_status_fd);
    CellWait w(sock);
    embed::WithoutGil(WaitForCell, &w);
    wire::RunParams params;
    if (w.r <= 0 || w.h.type != wire::Type::kCell || !ParseRun(w.payload, w.fds, &params)) {
      _exit(0);  // the zygote closed the session (or sent what no cell is)
    }
    std::vector<int> fds;
    for (UniqueFd& fd : w.fds) fds.push_back(fd.Release());
    if (!wire::DecodeRunBundle(ReadAll(fds[wire::kCode]), &input.code, &input.files) ||
        !sandbox::fds::ApplyCell(fds, g_status_fd)) {
      _exit(126);
    }
    timeout_s = params.timeout_s;
  }
}

// The runner's fds leave their owners here: from now on they are numbers the
// lockdown moves into place, and the process ends with _exit. A session's
// first run carries one more fd, last: the socket its further cells arrive
// on, made receive-only here.
[[noreturn]] void RunnerExecute(const Zygote& z, const wire::RunParams& params,
                                std::vector<UniqueFd> owned) {
  int session_sock = -1;
  if (owned.size() == wire::kRunFdCount + 1) {
    session_sock = owned.back().Release();
    owned.pop_back();
    if (shutdown(session_sock, SHUT_WR) != 0) _exit(126);
  }
  std::vector<int> fds;
  for (UniqueFd& fd : owned) fds.push_back(fd.Release());
  embed::RunInput input;
  if (!wire::DecodeRunBundle(ReadAll(fds[wire::kCode]), &input.code, &input.files)) _exit(126);
  input.limits = z.output_limits;
  const bool session = session_sock >= 0;
  std::string error, cwd;
  timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  bool locked =
      sandbox::LockdownFinish(z.sandbox, &g_lock, params.workdir,
                              session ? params.session_cpu_s : params.timeout_s, &cwd, &error);
  g_lockdown_us = MicrosSince(t0);
  // Then only the run's fds are left (whatever the lockdown still held, such
  // as a prepared ruleset, goes too); no code of the caller has run yet.
  g_status_fd = sandbox::fds::StatusFd(z.sandbox.limits.max_open_files);
  if (!sandbox::fds::ApplyInRunner(fds, g_status_fd, session ? session_sock : -1)) _exit(126);
  // Never run code half locked down: the supervisor turns a failed verdict
  // into a tool error naming the layer.
  WriteVerdict(locked, error);
  if (!locked) Finish(125, wire::kReasonNone);
  input.cwd = cwd;
  input.results_fd = sandbox::fds::ResultsFd(g_status_fd);
  if (session) SessionLoop(std::move(input), params.timeout_s);
  std::string reason;
  int status = embed::RunCode(input, &reason);
  Finish(status, ReasonCode(reason));
}

// fork() through CPython's hooks. Returns 0 in the child.
// clone_flags 0: fork(); else a raw clone with those flags (a namespace to
// be born in: glibc's fork takes no flags).
pid_t ForkPython(Zygote& z, pid_t child_expects_parent, std::string* error, long clone_flags = 0) {
  // A native thread pool started by an import would be copied as a lock held
  // by nobody: refuse to fork rather than hand out a broken runner.
  int tasks = CountTasks();
  if (tasks != 1) {
    *error = "zygote has " + std::to_string(tasks) + " threads; refusing to fork";
    errno = EAGAIN;
    return -1;
  }
  embed::BeforeFork();
  pid_t pid = clone_flags == 0 ? fork()
                               : static_cast<pid_t>(syscall(SYS_clone, clone_flags | SIGCHLD,
                                                            nullptr, nullptr, nullptr, nullptr));
  if (pid == 0) {
    embed::AfterForkInChild();
    RunnerPrepare(z, child_expects_parent);
    return 0;
  }
  int err = errno;
  embed::AfterForkInParent();
  if (pid < 0) *error = std::string(clone_flags ? "clone: " : "fork: ") + strerror(err);
  errno = err;
  return pid;
}

// The init of a run's own pid namespace: it never runs the caller's code,
// holds nothing but its report socket, reaps what the run leaves, and when
// the runner ends, reports the runner's real wait status to the zygote and
// exits, which kills whatever is left in the namespace at once.
[[noreturn]] void ReaperMain(pid_t runner, int sock) {
  syscall(SYS_close_range, 0, sock - 1, 0);
  syscall(SYS_close_range, sock + 1, ~0U, 0);
  // It only waits and reports: in the root posture it would otherwise keep
  // nearly every capability of the zygote, beside the caller's code.
  sandbox::credentials::DropEverything();
  int runner_status = 0;
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, __WALL);
    if (pid == runner) {
      runner_status = status;
      break;
    }
    if (pid < 0 && errno != EINTR) _exit(127);  // the runner vanished unseen
  }
  wire::Header h{wire::Type::kExited, 0, 0, runner_status};
  wire::Send(sock, h, nullptr, 0, nullptr, 0);
  _exit(0);
}

// Forks a sandboxed process: returns 0 in the runner; in the zygote, the
// pid to watch (the run's init when runs get a pid namespace of their own).
// reaper_sock: where that init reports the runner's wait status.
pid_t ForkSandboxed(Zygote& z, int reaper_sock, std::string* cgroup, std::string* error) {
  const sandbox::cgroups::Delegation& cg = z.sandbox.cgroups;
  cgroup->clear();
  if (cg.version > 0) {
    // The run's cgroup exists before its first process: that process joins
    // it before it forks anything, so nothing of the run is ever outside.
    std::string name = "r" + std::to_string(++z.next_cgroup);
    if (!sandbox::cgroups::Create(cg, z.sandbox.limits, name, error)) return -1;
    *cgroup = name;
  }
  // With runs in pid namespaces of their own, the child is pid 1 of a fresh
  // namespace: the run sees only itself, and cannot renice, pin or read
  // other runs' processes. unshare(CLONE_NEWPID) works once per process, so
  // each init is cloned straight into its own namespace. A raw clone leaves
  // glibc's cached thread id stale in the child; the init never needs it (it
  // only waits, reports and forks), and the runner it forks through glibc
  // gets a correct one.
  const bool pidns = z.sandbox.run_pidns;
  pid_t pid = ForkPython(z, pidns ? 0 : z.self, error, pidns ? CLONE_NEWPID : 0);
  if (pid < 0 && !cgroup->empty()) sandbox::cgroups::Destroy(cg, *cgroup);
  if (pid != 0) return pid;
  if (!cgroup->empty() && !sandbox::cgroups::Join(cg, *cgroup, error)) _exit(127);
  if (!pidns) return 0;
  std::string ignored;
  pid_t runner = ForkPython(z, 1, &ignored);
  if (runner < 0) _exit(127);
  if (runner > 0) ReaperMain(runner, reaper_sock);
  return 0;
}

void ForkSpare(Zygote& z) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    z.spare_fork_failed = true;
    return;
  }
  std::string error, cgroup;
  pid_t pid = ForkSandboxed(z, sv[1], &cgroup, &error);
  if (pid == 0) {
    close(sv[0]);
    // While it waits, the spare locks itself down as far as it can without
    // its run: that work is off the request's path.
    timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sandbox::LockdownAhead(z.sandbox, &g_lock);
    g_lockdown_ahead_us = MicrosSince(t0);
    if (z.prefault > 0) embed::Prefault(z.prefault);
    wire::Header h;
    std::string payload;
    std::vector<UniqueFd> fds;
    wire::RunParams params;
    if (wire::Receive(sv[1], &h, &payload, &fds) <= 0 || h.type != wire::Type::kRun ||
        !ParseRun(payload, fds, &params, true)) {
      _exit(0);  // retired unused
    }
    close(sv[1]);
    RunnerExecute(z, params, std::move(fds));
  }
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    z.spare_fork_failed = true;
    return;
  }
  z.spares.push_back({pid, UniqueFd(sv[0]), cgroup});
}

void ReplenishSpares(Zygote& z) {
  while (!z.spare_fork_failed && z.spares.size() < z.want_spares) ForkSpare(z);
}

// Hands the run to a spare; false if none could take it. *sock: where the
// spare's init reports (kept until the run is reaped). cells: a session's
// cell socket (the interpreter's end), or -1.
bool HandToSpare(Zygote& z, const wire::Header& h, const std::string& payload,
                 const std::vector<UniqueFd>& fds, int cells, pid_t* pid, UniqueFd* sock,
                 std::string* cgroup) {
  std::vector<int> raw;
  for (const UniqueFd& fd : fds) raw.push_back(fd.get());
  if (cells >= 0) raw.push_back(cells);
  while (!z.spares.empty()) {
    Spare sp = std::move(z.spares.front());
    z.spares.pop_front();
    bool ok = wire::Send(sp.sock.get(), h, payload.data(), payload.size(), raw.data(),
                         static_cast<int>(raw.size()));
    if (ok) {
      *pid = sp.pid;
      *sock = std::move(sp.sock);
      *cgroup = sp.cgroup;
      return true;
    }
    kill(sp.pid, SIGKILL);  // a spare that cannot take work is retired
    z.retired.push_back({sp.pid, UniqueFd(), sp.cgroup});
  }
  return false;
}

// A session's cell socket: the zygote's end writes only, the interpreter's
// reads only (made so in the runner).
bool MakeCellSocket(UniqueFd* zygote_end, UniqueFd* runner_end) {
  int cv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cv) != 0) return false;
  zygote_end->Reset(cv[0]);
  runner_end->Reset(cv[1]);
  return shutdown(cv[0], SHUT_RD) == 0;
}

// A session's CPU bound for a cell of timeout_s that starts now: what the
// run (every process of it, and what they reaped) used so far, plus the
// timeout and the slack.
int64_t CpuBoundTicks(pid_t pid, int64_t timeout_s) {
  static const int64_t hz = sysconf(_SC_CLK_TCK);
  return std::max<int64_t>(TreeUsage({pid})[0].cpu_ticks, 0) +
         (timeout_s + sandbox::limits::kCpuSlackS) * hz;
}

// The fds are the supervisor's run ends; ours are closed when this returns
// (a spare or a fresh runner holds its own copies by then).
void StartRun(Zygote& z, const wire::Header& h, const std::string& payload,
              std::vector<UniqueFd> fds) {
  auto fail = [&](int err, const std::string& what) {
    wire::Header r{wire::Type::kStartFailed, 0, h.run_id, err};
    wire::Send(z.control, r, what.data(), what.size(), nullptr, 0);
  };
  wire::RunParams params;
  if (!ParseRun(payload, fds, &params)) return fail(EPROTO, "malformed run request");
  UniqueFd cells, runner_cells;
  if (params.session_cpu_s > 0 && !MakeCellSocket(&cells, &runner_cells)) {
    int err = errno;
    return fail(err, std::string("socketpair: ") + strerror(err));
  }
  pid_t pid = 0;
  UniqueFd sock;
  std::string cgroup;
  if (!HandToSpare(z, h, payload, fds, runner_cells ? runner_cells.get() : -1, &pid, &sock,
                   &cgroup)) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      int err = errno;
      return fail(err, std::string("socketpair: ") + strerror(err));
    }
    std::string error;
    pid = ForkSandboxed(z, sv[1], &cgroup, &error);
    if (pid == 0) {
      close(sv[0]);
      close(sv[1]);
      if (runner_cells) fds.push_back(std::move(runner_cells));
      RunnerExecute(z, params, std::move(fds));
    }
    int err = errno;
    close(sv[1]);
    if (pid < 0) {
      close(sv[0]);
      return fail(err, error);
    }
    sock.Reset(sv[0]);
  }
  const bool session = static_cast<bool>(cells);
  z.runners[pid] = {h.run_id, std::move(sock), cgroup, false, std::move(cells)};
  // The run's cgroup, by name: the supervisor reads a session's memory
  // events there between its cells.
  wire::Header r{wire::Type::kStarted, 0, h.run_id, pid};
  wire::Send(z.control, r, cgroup.data(), cgroup.size(), nullptr, 0);
  // After the answer: reading the run's CPU scans /proc, off the call's path.
  if (session) z.runners[pid].cpu_bound_ticks = CpuBoundTicks(pid, params.timeout_s);
}

void KillRun(Zygote& z, uint64_t run_id) {
  for (auto& [pid, run] : z.runners) {
    if (run.run_id != run_id) continue;
    // A run's init takes its whole namespace with it; without one, the
    // tree is found in /proc. Either way at once, never queued.
    if (z.sandbox.run_pidns) {
      kill(pid, SIGKILL);
    } else {
      KillTree(pid, true);
    }
    return;
  }
}

// A session's next cell goes to its interpreter, on the socket it got its
// first run on. If the session is gone, nothing is sent: its end is (or is
// about to be) reported.
void ForwardCell(Zygote& z, const wire::Header& h, const std::string& payload,
                 const std::vector<UniqueFd>& fds) {
  wire::RunParams params;
  if (!ParseRun(payload, fds, &params)) return;
  for (auto& [pid, run] : z.runners) {
    if (run.run_id != h.run_id || !run.cells) continue;
    std::vector<int> raw;
    for (const UniqueFd& fd : fds) raw.push_back(fd.get());
    if (!wire::Send(run.cells.get(), h, payload.data(), payload.size(), raw.data(),
                    static_cast<int>(raw.size()))) {
      kill(pid, SIGKILL);  // an interpreter that cannot take its cell is ended
    }
    // After the send: reading the run's CPU scans /proc, off the cell's path
    // (what the cell used meanwhile, microseconds, joins the base).
    run.cpu_bound_ticks = CpuBoundTicks(pid, params.timeout_s);
    return;
  }
}

// KeyboardInterrupt for a session's cell: SIGINT to its interpreter only
// (under its init, when runs have their own pid namespace), as Jupyter's
// interrupt does.
void InterruptRun(Zygote& z, uint64_t run_id) {
  for (auto& [pid, run] : z.runners) {
    if (run.run_id != run_id) continue;
    if (!z.sandbox.run_pidns) {
      kill(pid, SIGINT);
      return;
    }
    for (pid_t child : Children(pid)) kill(child, SIGINT);
    return;
  }
}

std::set<pid_t> LiveRunners(const Zygote& z) {
  std::set<pid_t> keep;
  for (auto& [pid, run] : z.runners) keep.insert(pid);
  for (const Spare& sp : z.spares) keep.insert(sp.pid);
  return keep;
}

// A spare (idle or retired) was reaped: its socket and cgroup go too.
// Returns false if pid was no spare (an orphan of a finished run).
bool ForgetSpare(Zygote& z, pid_t pid) {
  for (auto it = z.spares.begin(); it != z.spares.end(); ++it) {
    if (it->pid == pid) {
      if (!it->cgroup.empty()) sandbox::cgroups::Destroy(z.sandbox.cgroups, it->cgroup);
      z.spares.erase(it);
      // A spare that dies idle is unusual: retry on the next event, never in a loop.
      z.spare_fork_failed = true;
      return true;
    }
  }
  for (auto it = z.retired.begin(); it != z.retired.end(); ++it) {
    if (it->pid == pid) {
      if (!it->cgroup.empty()) sandbox::cgroups::Destroy(z.sandbox.cgroups, it->cgroup);
      z.retired.erase(it);
      return true;
    }
  }
  return false;
}

// Tells the supervisor that a run ended, with the runner's wait status and
// the kernel's word on memory (the run's cgroup): the trusted side only.
void ReportExit(Zygote& z, Zygote::Run& run, int status) {
  uint32_t flags = run.ended_by;
  if (!run.cgroup.empty() && sandbox::cgroups::OomKilled(z.sandbox.cgroups, run.cgroup)) {
    flags |= wire::kExitedOomKilled;
  }
  wire::Header r{wire::Type::kExited, flags, run.run_id, status};
  wire::Send(z.control, r, nullptr, 0, nullptr, 0);
  run.reported = true;
}

// A run's init reports the runner's status as soon as it has reaped it:
// answered then, the call does not also wait for the init's own exit.
// The runner's wait status, if the run's init has reported it on sock.
bool ReceiveInitReport(int sock, int* status) {
  wire::Header rh;
  std::string payload;
  int r = wire::ReceiveNow(sock, &rh, &payload, nullptr);
  if (r <= 0 || rh.type != wire::Type::kExited) return false;
  *status = static_cast<int>(rh.value);
  return true;
}

void ReadReaperReport(Zygote& z, pid_t pid) {
  auto it = z.runners.find(pid);
  if (it == z.runners.end() || it->second.reported) return;
  int status;
  if (ReceiveInitReport(it->second.sock.get(), &status)) ReportExit(z, it->second, status);
}

void ReapChildren(Zygote& z) {
  bool runner_ended = false;
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    auto it = z.runners.find(pid);
    if (it == z.runners.end()) {
      ForgetSpare(z, pid);  // a spare that died idle, or an orphan of a finished run
      continue;
    }
    Zygote::Run run = std::move(it->second);
    z.runners.erase(it);
    // The run's init reported the runner's own status before it exited.
    if (!run.reported && run.sock) ReceiveInitReport(run.sock.get(), &status);
    if (!run.reported) ReportExit(z, run, status);
    if (!run.cgroup.empty()) sandbox::cgroups::Destroy(z.sandbox.cgroups, run.cgroup);
    runner_ended = true;
  }
  // Whatever a finished run left behind was re-parented to us: end it.
  if (runner_ended) KillChildrenExcept(z.self, LiveRunners(z));
}

// One message from the supervisor; its EOF ends the zygote and every run.
void OnControlMessage(Zygote& z) {
  wire::Header h;
  std::string payload;
  std::vector<UniqueFd> fds;
  if (wire::Receive(z.control, &h, &payload, &fds) <= 0) {
    // The supervisor is gone or closed us: nothing may outlive it.
    for (auto& [pid, run] : z.runners) KillTree(pid, true);
    for (const Spare& sp : z.spares) kill(sp.pid, SIGKILL);
    KillChildrenExcept(z.self, {});
    _exit(0);
  }
  if (h.type == wire::Type::kRun) {
    StartRun(z, h, payload, std::move(fds));
  } else if (h.type == wire::Type::kKill) {
    KillRun(z, h.run_id);
  } else if (h.type == wire::Type::kCell) {
    ForwardCell(z, h, payload, fds);
  } else if (h.type == wire::Type::kInterrupt) {
    InterruptRun(z, h.run_id);
  }
}

// A session's RLIMIT_CPU is its own: its code may raise the soft limit to
// the hard one (the session's whole budget) and leave threads or children
// spinning between cells. The zygote, which the code cannot reach, holds
// the bound instead: once a second it reads each session's CPU time (the
// whole run's, from /proc) and ends a session past the bound of its latest
// cell. Measured before: a 2-second cell left threads that burnt 29.9 s of
// CPU where the bound is 8.
//
// Processes likewise: RLIMIT_NPROC counts every process and thread of the
// sandbox uid, all runs together, so the children a session keeps between
// calls were taken from every other run for as long as it lived (44 held
// sleepers left a 64-process server unable to fork anywhere else). The
// sessions together may hold at most half of MCP_EXEC_MAX_PROCESSES beyond
// their interpreters (and their inits); while they hold more, the session
// holding the most is ended. One-shot runs so always keep half of it.
constexpr auto kWatchEvery = std::chrono::seconds(1);

int64_t HeldProcessesBound(const Zygote& z) { return z.sandbox.limits.max_processes / 2; }

void WatchSessions(Zygote& z) {
  std::vector<pid_t> pids;
  std::vector<Zygote::Run*> runs;
  for (auto& [pid, run] : z.runners) {
    if (run.cpu_bound_ticks <= 0) continue;
    pids.push_back(pid);
    runs.push_back(&run);
  }
  if (pids.empty()) return;
  const std::vector<TreeUse> use = TreeUsage(pids);
  // What every session has of its own: the interpreter's main thread and
  // its output flusher (embed/python.cc), and the init of its pid namespace.
  // Measured: an idle session's tree is 3 tasks with a pid namespace.
  const int64_t own = z.sandbox.run_pidns ? 3 : 2;
  std::vector<int64_t> held(runs.size());
  int64_t total = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]->ended_by != 0) continue;  // killed on an earlier pass, not yet reaped
    if (use[i].cpu_ticks > runs[i]->cpu_bound_ticks) {
      runs[i]->ended_by = wire::kExitedCpuBound;
      continue;
    }
    held[i] = std::max<int64_t>(use[i].tasks - own, 0);
    total += held[i];
  }
  const int64_t bound = HeldProcessesBound(z);
  while (bound > 0 && total > bound) {
    size_t most = std::max_element(held.begin(), held.end()) - held.begin();
    runs[most]->ended_by = wire::kExitedHeldProcesses;
    total -= std::exchange(held[most], 0);
  }
  std::vector<uint64_t> ended;
  for (const Zygote::Run* run : runs) {
    if (run->ended_by != 0) ended.push_back(run->run_id);
  }
  for (uint64_t id : ended) KillRun(z, id);
}

bool HasSessions(const Zygote& z) {
  for (const auto& [pid, run] : z.runners) {
    if (run.cpu_bound_ticks > 0) return true;
  }
  return false;
}

[[noreturn]] void Serve(Zygote& z, int sigfd) {
  auto next_watch = std::chrono::steady_clock::now() + kWatchEvery;
  for (;;) {
    if (std::chrono::steady_clock::now() >= next_watch) {
      WatchSessions(z);
      next_watch = std::chrono::steady_clock::now() + kWatchEvery;
    }
    ReplenishSpares(z);
    std::vector<pollfd> pfds = {{z.control, POLLIN, 0}, {sigfd, POLLIN, 0}};
    std::vector<pid_t> reapers;  // runs whose init may report on its socket
    for (auto& [pid, run] : z.runners) {
      if (!run.sock || run.reported || !z.sandbox.run_pidns) continue;
      pfds.push_back({run.sock.get(), POLLIN, 0});
      reapers.push_back(pid);
    }
    // Spares that could not be forked (or died idle) are retried after a
    // pause even when nothing else happens: a quiet server would otherwise
    // keep none, and its next call would pay for a cold fork.
    int timeout_ms = z.spare_fork_failed && z.spares.size() < z.want_spares ? kSpareRetryMs : -1;
    if (HasSessions(z)) {
      auto until = std::chrono::duration_cast<std::chrono::milliseconds>(
                       next_watch - std::chrono::steady_clock::now())
                       .count();
      int watch_ms = static_cast<int>(std::clamp<int64_t>(until, 0, 1000));
      timeout_ms = timeout_ms < 0 ? watch_ms : std::min(timeout_ms, watch_ms);
    }
    if (poll(pfds.data(), pfds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      Die("poll");
    }
    z.spare_fork_failed = false;
    for (size_t i = 0; i < reapers.size(); ++i) {
      if (pfds[2 + i].revents & POLLIN) ReadReaperReport(z, reapers[i]);
    }
    if (pfds[1].revents & POLLIN) {
      signalfd_siginfo si;
      while (read(sigfd, &si, sizeof si) == sizeof si) {
      }
      ReapChildren(z);
    }
    if (pfds[0].revents & (POLLIN | POLLHUP | POLLERR)) OnControlMessage(z);
  }
}

// The fds the supervisor passed besides the control socket: the runs'
// cgroup parents, where the server has them.
void AdoptCgroupFds(Zygote& z, const ZygoteArgs& args) {
  sandbox::cgroups::Delegation& cg = z.sandbox.cgroups;
  cg.version = static_cast<int>(args.cgroup_version);
  cg.memory_dir = args.cgroup_memory_dir;
  cg.pids_dir = args.cgroup_pids_dir;
  cg.why_not_memory = args.cgroup_why_not_memory;
  cg.why_not_pids = args.cgroup_why_not_pids;
  cg.memory_fd = cg.memory_dir.empty() ? -1 : kZygoteMemoryCgroupFd;
  cg.pids_fd = cg.pids_dir.empty() ? -1 : (cg.version == 2 ? cg.memory_fd : kZygotePidsCgroupFd);
  for (int fd : {kZygoteMemoryCgroupFd, kZygotePidsCgroupFd}) {
    if (fd != cg.memory_fd && fd != cg.pids_fd) {
      close(fd);
    } else {
      fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
  sandbox::cgroups::Probe(&cg, z.sandbox.limits);
}

// Tells the supervisor this set of namespaces cannot be had here: it starts
// another zygote with fewer.
[[noreturn]] void RefuseNamespaces(const Zygote& z, const std::string& why) {
  wire::Header h{wire::Type::kFatal, 0, 0, wire::kFatalNamespaces};
  wire::Send(z.control, h, why.data(), why.size(), nullptr, 0);
  _exit(1);
}

// The process becomes the zygote: tied to the supervisor's life, in its own
// session, the subreaper of its runs, its namespaces finished.
void BecomeZygote(Zygote& z, const ZygoteArgs& args) {
  // Die with the supervisor, whatever kills it. In a new pid namespace our
  // parent is invisible (getppid() is 0); the control socket's EOF ends us too.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Die("prctl(PR_SET_PDEATHSIG)");
  pid_t parent = getppid();
  if (parent != args.supervisor && parent != 0) _exit(1);
  setsid();
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) Die("prctl(PR_SET_CHILD_SUBREAPER)");
  z.self = getpid();
  z.sandbox.zygote_pid = z.self;
  std::string ns_error;
  if (!sandbox::namespaces::FinishInZygote(z.sandbox.ns_flags, args.outer_uid, args.outer_gid,
                                           &ns_error)) {
    RefuseNamespaces(z, ns_error);
  }
  // Same-uid processes (a run, in the container posture) may not read our
  // memory or /proc files. Not before the id maps: a non-dumpable process
  // cannot write its own /proc/self/uid_map.
  if (prctl(PR_SET_DUMPABLE, 0) != 0) Die("prctl(PR_SET_DUMPABLE, 0)");
  if (!sandbox::namespaces::ProbeRunNamespaces(z.sandbox.ns_flags, &z.sandbox.run_pidns,
                                               &z.sandbox.run_netns)) {
    Die("probe of the runs' namespaces");
  }
}

// SIGCHLD comes through a signalfd; runners get the mask they would have had.
void WatchChildren(Zygote& z) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &z.original_mask);
  sigdelset(&z.original_mask, SIGCHLD);
  z.sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (z.sigfd < 0) Die("signalfd");
}

// Python up and warm, still one thread, the late layers prepared: returns
// the report for kReady, or sends kFatal and exits.
std::string WarmUp(Zygote& z, const ZygoteArgs& args) {
  std::string report, error;
  const std::vector<std::string> preload = SplitComma(args.preload);
  if (!embed::InitInterpreter(args.huge_pages != 0, &error) ||
      !embed::WarmUp(preload, &report, &error)) {
    SendFatal(z.control, error);
    _exit(1);
  }
  embed::InstallCrashFlush();
  int tasks = CountTasks();
  if (tasks != 1) {
    SendFatal(z.control, "after warm-up the zygote runs " + std::to_string(tasks) +
                             " threads; a native thread pool was not pinned to one thread");
    _exit(1);
  }
  sandbox::PrepareLate(&z.sandbox);
  if ((z.sandbox.ns_flags & CLONE_NEWNS) && !z.sandbox.minimal_root) {
    // Never serve from a view half made.
    RefuseNamespaces(z, "the runs' minimal root could not be made: " + z.sandbox.readonly_error);
  }
  nlohmann::json full = nlohmann::json::parse(report);
  // The image every run is forked from, before and after its heap went on
  // huge pages (fork copies, and exit frees, one entry per page).
  embed::MemoryShape before = embed::ReadMemoryShape();
  int64_t collapsed = args.huge_pages ? embed::CollapseHeapToHugePages() : 0;
  embed::MemoryShape after = embed::ReadMemoryShape();
  auto shape = [](const embed::MemoryShape& m) {
    return nlohmann::json{
        {"mappings", m.mappings}, {"rss_kib", m.rss_kib}, {"anon_huge_kib", m.anon_huge_kib}};
  };
  full["image"] = {{"before", shape(before)},
                   {"after", shape(after)},
                   {"huge_pages", args.huge_pages != 0},
                   {"collapsed_kib", collapsed / 1024}};
  full["sandbox"] = {{"namespaces", sandbox::namespaces::FlagNames(z.sandbox.ns_flags)},
                     {"layers", sandbox::ToJson(sandbox::Report(z.sandbox))}};
  return full.dump();
}

}  // namespace

// The zygote's arguments (the supervisor's pid, every limit, the host's
// cgroup paths) are the server's business, but every process forked from the
// zygote (a run's init, a runner) shows them in /proc/<pid>/cmdline, which
// the run can read. Once parsed they are blanked in place (the kernel's
// argument area: the strings lie end to end): "mcp-exec __zygote" is left.
void HideArguments(int argc, char** argv) {
  if (argc < 1) return;
  char* start = argv[0];
  char* end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
  static const char kTitle[] = "mcp-exec\0__zygote";  // two strings, NUL-terminated
  memset(start, 0, static_cast<size_t>(end - start));
  memcpy(start, kTitle, std::min(sizeof kTitle, static_cast<size_t>(end - start)));
}

int ZygoteMain(int argc, char** argv) {
  ZygoteArgs args;
  std::string error;
  if (!ZygoteArgs::Parse(argc, argv, &args, &error)) {
    fprintf(stderr, "mcp-exec __zygote is started by the server, not by hand (%s)\n",
            error.c_str());
    return 2;
  }
  HideArguments(argc, argv);
  Zygote z;
  z.control = kZygoteControlFd;
  z.want_spares = static_cast<size_t>(args.spares);
  z.sandbox.ns_flags = sandbox::namespaces::ParseFlagNames(args.namespaces);
  sandbox::RunLimits& limits = z.sandbox.limits;
  limits.memory_bytes = args.memory_bytes;
  limits.disk_bytes = args.disk_bytes;
  limits.max_processes = args.max_processes;
  limits.max_open_files = args.max_open_files;
  z.output_limits = args.output.ByName();
  z.prefault = static_cast<int>(args.prefault);
  fcntl(z.control, F_SETFD, FD_CLOEXEC);
  AdoptCgroupFds(z, args);
  BecomeZygote(z, args);
  sandbox::PrepareEarly(&z.sandbox);
  WatchChildren(z);
  std::string report = WarmUp(z, args);
  wire::Header ready{wire::Type::kReady, 0, 0, z.self};
  if (!wire::Send(z.control, ready, report.data(), report.size(), nullptr, 0)) Die("send ready");
  Serve(z, z.sigfd);
}

}  // namespace mcpexec
