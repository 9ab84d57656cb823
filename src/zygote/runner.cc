// A runner's life, from the fork to its exit, as one ladder (cf. nsjail's
// containProc, minijail's minijail_enter). Each step runs in the order
// written here, in the runner's own process:
//
//  1. ForkSandboxed: the run's cgroup is made; ForkPython forks the warmed
//     interpreter (refused if the zygote has grown a thread), into a pid
//     namespace of its own where runs have one; the child joins the cgroup.
//     With a pid namespace the child is the run's init (ReaperMain): it
//     forks the runner and only waits and reports its wait status.
//  2. RunnerPrepare, first thing in every child: the zygote's descriptors
//     closed, signals restored, its own session, child subreaper, death
//     signal with the zygote.
//  3. SpareMain (a runner forked ahead): LockdownAhead and the prefault
//     while it waits; then its run arrives on its socket.
//  4. RunnerExecute: the run's fds become numbers; LockdownFinish (the
//     layers that need the run: its directory, its CPU limit, seccomp
//     last); only the run's fds are left; the verdict goes on the status
//     pipe before any of the caller's code runs, and a refused lockdown
//     ends here.
//  5. The caller's code: RunCode for a one-shot run, then Finish (output
//     flushed, the runtime's note, fds closed, _exit); or SessionLoop for
//     a session's interpreter, one cell after another until its socket
//     closes.
//
// Its state is one RunnerState, g_runner: a runner is one process and
// single-threaded until the caller's code runs.
#include "zygote/runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "embed/python.h"
#include "ipc/run_bundle.h"
#include "ipc/status.h"
#include "sandbox/cgroups.h"
#include "sandbox/credentials.h"
#include "sandbox/fds.h"
#include "sandbox/limits.h"

namespace mcpexec {

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

namespace {

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

// The runner's own state from its fork to its exit, in one place: one per
// process (a runner is single-threaded until the caller's code runs).
struct RunnerState {
  sandbox::LockState lock;        // how far its lockdown got
  int status_fd = -1;             // the status pipe, once the lockdown placed it
  int32_t lockdown_us = 0;        // the lockdown's cost on the request's path
  int32_t lockdown_ahead_us = 0;  // and ahead of it (spares)
  ipc::RunNote note{};            // the last record: the reason and the run's trace
};
RunnerState g_runner;

int32_t MicrosSince(const timespec& t0) {
  timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return static_cast<int32_t>((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
}

// The verdict on this runner's lockdown: the one record of the status pipe
// the supervisor trusts, so it is written before any of the caller's code
// runs. A runner that cannot deliver it does not run the code.
void WriteVerdict(bool ok, const std::string& error) {
  ipc::LockdownVerdict v{};
  v.magic = ipc::kVerdictMagic;
  v.ok = ok ? 1 : 0;
  v.lockdown_us = g_runner.lockdown_us;
  v.ahead_us = g_runner.lockdown_ahead_us;
  snprintf(v.error, sizeof v.error, "%s", error.c_str());
  ssize_t n;
  do {
    n = write(g_runner.status_fd, &v, sizeof v);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof v)) _exit(125);
}

int64_t MonotonicNanos() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

int64_t MinorFaults() {
  rusage ru{};
  return getrusage(RUSAGE_SELF, &ru) == 0 ? static_cast<int64_t>(ru.ru_minflt) : 0;
}

// The note goes out when it says something: a reason, or the trace of code
// that ran.
[[noreturn]] void Finish(int status, uint32_t reason) {
  fflush(nullptr);
  ipc::RunNote& note = g_runner.note;
  if (reason != ipc::kReasonNone || note.code_started_ns != 0) {
    note.magic = ipc::kNoteMagic;
    note.reason = reason;
    (void)!write(g_runner.status_fd, &note, sizeof note);
  }
  close(1);
  close(2);
  close(sandbox::fds::ResultsFd(g_runner.status_fd));
  close(sandbox::fds::ToolsFd(g_runner.status_fd));
  close(g_runner.status_fd);
  _exit(status);
}

}  // namespace

// with_cells: a session's first run, handed to a spare, also carries the
// socket its further cells will arrive on (last).
bool ParseRun(const std::string& payload, const std::vector<UniqueFd>& fds, ipc::RunParams* params,
              bool with_cells) {
  if (payload.size() != sizeof(ipc::RunParams)) return false;
  memcpy(params, payload.data(), sizeof *params);
  params->workdir[sizeof params->workdir - 1] = '\0';
  const bool session = params->session_cpu_s > 0;
  return fds.size() == ipc::kRunFdCount + (with_cells && session ? 1 : 0);
}

namespace {

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
  if (reason == "memory") return ipc::kReasonMemory;
  if (reason == "file_size") return ipc::kReasonFileSize;
  return ipc::kReasonNone;
}

void WriteCellDone(int status, uint32_t reason) {
  ipc::CellDone done{ipc::kCellDoneMagic, status, reason};
  ssize_t n;
  do {
    n = write(g_runner.status_fd, &done, sizeof done);
  } while (n < 0 && errno == EINTR);
}

// What a session's interpreter receives for its next cell.
struct CellWait {
  explicit CellWait(int s) : sock(s) {}
  int sock;
  ipc::Header h{};
  std::string payload;
  std::vector<UniqueFd> fds;
  int r = 0;
};

void WaitForCell(void* arg) {
  auto* w = static_cast<CellWait*>(arg);
  w->r = ipc::Receive(w->sock, &w->h, &w->payload, &w->fds);
}

// What a session's own threads print between cells: kept in a pipe per
// stream (the kernel's 64 KiB; a writer waits when it is full, as at a
// terminal nobody reads) and written out first in the next cell, instead of
// going to /dev/null. The read ends are non-blocking; all four are
// close-on-exec (a child started between cells inherits only fds 1 and 2).
struct BetweenCells {
  int out[2] = {-1, -1}, err[2] = {-1, -1};

  bool Open() {
    if (pipe2(out, O_CLOEXEC) != 0) return false;
    if (pipe2(err, O_CLOEXEC) != 0) return false;
    return fcntl(out[0], F_SETFL, O_NONBLOCK) == 0 && fcntl(err[0], F_SETFL, O_NONBLOCK) == 0;
  }
  // After DetachCell: fds 1 and 2 write into the pipes.
  void Hold() const {
    if (out[1] >= 0 && err[1] >= 0) {
      dup2(out[1], 1);
      dup2(err[1], 2);
    }
  }
  // After the next cell's fds are in place: what was held goes out first.
  void Release() const {
    Copy(out[0], 1);
    Copy(err[0], 2);
  }

 private:
  static void Copy(int from, int to) {
    if (from < 0) return;
    char buf[16384];
    for (;;) {
      ssize_t n = read(from, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      for (ssize_t done = 0; done < n;) {
        ssize_t w = write(to, buf + done, static_cast<size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        done += w;
      }
    }
  }
};

// A session's interpreter after its lockdown: runs its first cell, then
// waits (the GIL released, so its threads go on) for the next on its socket,
// until the socket closes or the process is killed. Its fds are numbers from
// here on, as in RunnerExecute.
[[noreturn]] void SessionLoop(embed::RunInput input, int64_t timeout_s) {
  const int sock = sandbox::fds::SessionFd(g_runner.status_fd);
  // Opened while the status and results fds are open: the pipes cannot take
  // their numbers.
  BetweenCells between;
  if (!between.Open()) between = BetweenCells{};
  for (int cell = 1;; ++cell) {
    SetCellCpuLimit(timeout_s);
    embed::DropPendingInterrupt();
    std::string reason;
    int status = embed::RunCell(input, cell, &reason);
    fflush(nullptr);
    WriteCellDone(status, ReasonCode(reason));
    sandbox::fds::DetachCell(g_runner.status_fd);
    between.Hold();
    CellWait w(sock);
    embed::WithoutGil(WaitForCell, &w);
    ipc::RunParams params;
    if (w.r <= 0 || w.h.type != ipc::Type::kCell || !ParseRun(w.payload, w.fds, &params)) {
      _exit(0);  // the zygote closed the session (or sent what no cell is)
    }
    std::vector<int> fds;
    for (UniqueFd& fd : w.fds) fds.push_back(fd.Release());
    if (!ipc::DecodeRunBundle(ReadAll(fds[ipc::kCode]), &input.code, &input.files) ||
        !sandbox::fds::ApplyCell(fds, g_runner.status_fd)) {
      _exit(126);
    }
    between.Release();
    timeout_s = params.timeout_s;
  }
}

// The memory holder (answer before teardown). A runner's exit frees its
// address space before the kernel reports its status: with the zygote's
// image copied, milliseconds here, on the call's path. So a one-shot runner
// first clones a holder that shares its memory (CLONE_VM) and does nothing
// else: it closes its copies of the run's fds and sleeps with every signal
// blocked. The runner's exit then leaves the memory to the holder and its
// status comes at once; the holder dies with the run's pid namespace when
// the init has reported, and the memory is freed then, after the answer.
// Only where runs have a pid namespace of their own (StartHolder).
//
// It is cloned after the lockdown, so it has everything the run has and
// nothing more (the same seccomp filter, Landlock domain, credentials,
// namespaces, cgroup and limits): what the code could make for itself with
// clone(CLONE_VM). Its one job needs no libc: raw system calls only, since
// it shares the runner's thread-local storage (errno) and heap.
#if defined(__x86_64__)
#define MCP_EXEC_HOLDER 1
long RawSyscall5(long n, long a, long b, long c, long d, long e) {
  long ret;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
               : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
#define MCP_EXEC_HOLDER 1
long RawSyscall5(long n, long a, long b, long c, long d, long e) {
  register long x8 asm("x8") = n;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  register long x3 asm("x3") = d;
  register long x4 asm("x4") = e;
  asm volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
  return x0;
}
#endif

#ifdef MCP_EXEC_HOLDER
alignas(64) char g_holder_stack[16384];

// Its name, in the run's /proc: the escape suite tells it from others' by it.
constexpr char kHolderName[] = "mcp-exec-holder";
static_assert(sizeof kHolderName <= 16, "a task's comm is 16 bytes with its NUL");

int HolderMain(void* /*unused*/) {
  RawSyscall5(SYS_close_range, 0, 0xFFFFFFFFL, 0, 0, 0);
  // No fds, no timeout, every signal blocked while it waits: only SIGKILL
  // ends the wait (sizeof the kernel's sigset: 8 bytes).
  const uint64_t all = ~uint64_t{0};
  for (;;) RawSyscall5(SYS_ppoll, 0, 0, 0, reinterpret_cast<long>(&all), sizeof all);
}
#endif

// Starts the holder, where the run has a pid namespace of its own: the
// holder is the init's child (CLONE_PARENT), so the code's own wait() for
// any child never waits for it, and it dies with the namespace. Without
// one (no pid namespace, another architecture, or the clone refused: the
// process limit) the run goes on as before.
void StartHolder(bool run_pidns) {
#ifdef MCP_EXEC_HOLDER
  if (!run_pidns) return;
  // The holder starts with every signal blocked, and with its name (a
  // task's comm is copied at the clone, before it ever runs).
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  char name[16] = {};
  prctl(PR_GET_NAME, name);
  prctl(PR_SET_NAME, kHolderName);
  (void)clone(HolderMain, g_holder_stack + sizeof g_holder_stack, CLONE_VM | CLONE_PARENT | SIGCHLD,
              nullptr);
  prctl(PR_SET_NAME, name);
  sigprocmask(SIG_SETMASK, &old, nullptr);
#else
  (void)run_pidns;
#endif
}

}  // namespace

// The runner's fds leave their owners here: from now on they are numbers the
// lockdown moves into place, and the process ends with _exit. A session's
// first run carries one more fd, last: the socket its further cells arrive
// on, made receive-only here.
[[noreturn]] void RunnerExecute(const Zygote& z, const ipc::RunParams& params,
                                std::vector<UniqueFd> owned) {
  int session_sock = -1;
  if (owned.size() == ipc::kRunFdCount + 1) {
    session_sock = owned.back().Release();
    owned.pop_back();
    if (shutdown(session_sock, SHUT_WR) != 0) _exit(126);
  }
  std::vector<int> fds;
  for (UniqueFd& fd : owned) fds.push_back(fd.Release());
  embed::RunInput input;
  if (!ipc::DecodeRunBundle(ReadAll(fds[ipc::kCode]), &input.code, &input.files)) _exit(126);
  input.limits = z.output_limits;
  const bool session = session_sock >= 0;
  std::string error, cwd;
  timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  bool locked =
      sandbox::LockdownFinish(z.sandbox, &g_runner.lock, params.workdir,
                              session ? params.session_cpu_s : params.timeout_s, &cwd, &error);
  g_runner.lockdown_us = MicrosSince(t0);
  // Then only the run's fds are left (whatever the lockdown still held, such
  // as a prepared ruleset, goes too); no code of the caller has run yet.
  g_runner.status_fd = sandbox::fds::StatusFd(z.sandbox.limits.max_open_files);
  if (!sandbox::fds::ApplyInRunner(fds, g_runner.status_fd, session ? session_sock : -1))
    _exit(126);
  // Never run code half locked down: the supervisor turns a failed verdict
  // into a tool error naming the layer.
  WriteVerdict(locked, error);
  if (!locked) Finish(125, ipc::kReasonNone);
  input.cwd = cwd;
  input.results_fd = sandbox::fds::ResultsFd(g_runner.status_fd);
  input.tools_fd = sandbox::fds::ToolsFd(g_runner.status_fd);
  if (session) SessionLoop(std::move(input), params.timeout_s);
  StartHolder(z.sandbox.run_pidns);
  std::string reason;
  ipc::RunNote& note = g_runner.note;
  note.faults_before = MinorFaults();
  note.code_started_ns = MonotonicNanos();
  int status = embed::RunCode(input, &reason);
  note.code_finished_ns = MonotonicNanos();
  note.faults_during = MinorFaults() - note.faults_before;
  Finish(status, ReasonCode(reason));
}

namespace {

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
  ipc::Header h{ipc::Type::kExited, 0, 0, runner_status};
  ipc::Send(sock, h, nullptr, 0, nullptr, 0);
  _exit(0);
}

}  // namespace

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

// A spare: forked ahead of its run, it locks itself down as far as it can
// without the run (off the request's path), takes common page faults ahead,
// then waits on sock for its run and runs it.
[[noreturn]] void SpareMain(const Zygote& z, UniqueFd sock) {
  timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  sandbox::LockdownAhead(z.sandbox, &g_runner.lock);
  g_runner.lockdown_ahead_us = MicrosSince(t0);
  if (z.prefault > 0) embed::Prefault(z.prefault);
  ipc::Header h;
  std::string payload;
  std::vector<UniqueFd> fds;
  ipc::RunParams params;
  if (ipc::Receive(sock.get(), &h, &payload, &fds) <= 0 || h.type != ipc::Type::kRun ||
      !ParseRun(payload, fds, &params, true)) {
    _exit(0);  // retired unused
  }
  sock.Reset();
  RunnerExecute(z, params, std::move(fds));
}

}  // namespace mcpexec
