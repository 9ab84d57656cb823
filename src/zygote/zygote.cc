#include "zygote/zygote.h"

#include <Python.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pybind11/embed.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "process/proc_tree.h"
#include "process/wire.h"
#include "sandbox/fds.h"
#include "sandbox/lockdown.h"
#include "sandbox/namespaces.h"

namespace py = pybind11;

namespace mcpexec {

extern const char kRuntimeSource[];

namespace {

// A runner forked in advance, waiting on its socket for a run: the fork of
// the warmed image (milliseconds) happens between requests, not in one.
struct Spare {
  pid_t pid;
  int sock;
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
    int sock;
    std::string cgroup;
    bool reported = false;  // kExited already sent (the run's init reported first)
  };
  uint64_t next_cgroup = 0;
  std::map<pid_t, Run> runners;
  std::deque<Spare> spares;
  std::vector<Spare> retired;  // spares killed unused, until reaped
  size_t want_spares = 1;
  bool spare_fork_failed = false;  // retry on the next event, not in a loop
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

void InitPython() {
  PyPreConfig pre;
  PyPreConfig_InitIsolatedConfig(&pre);
  pre.utf8_mode = 1;  // open() and the std streams speak UTF-8 whatever the locale
  PyStatus st = Py_PreInitialize(&pre);
  if (PyStatus_Exception(st)) Die("Py_PreInitialize");

  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  // The prefix is the one of the interpreter we were built against, never
  // whatever `python3` is first on PATH.
  PyConfig_SetBytesString(&config, &config.home, MCP_EXEC_PYTHON_HOME);
  // sys.executable: what subprocess/multiprocessing users expect to re-run.
  std::string exe = std::string(MCP_EXEC_PYTHON_HOME) + "/bin/python3";
  PyConfig_SetBytesString(&config, &config.executable, exe.c_str());
  PyConfig_SetBytesString(&config, &config.program_name, exe.c_str());
  config.install_signal_handlers = 1;  // runners get CPython's usual SIGINT/SIGPIPE setup
  config.write_bytecode = 0;
  config.site_import = 1;
  py::initialize_interpreter(&config, 0, nullptr, false);
}

py::object LoadRuntime() {
  py::module_ types = py::module_::import("types");
  py::object mod = types.attr("ModuleType")("mcp_exec_runtime");
  py::object builtins = py::module_::import("builtins");
  // The runtime hides its own frames from tracebacks by this name.
  const char* filename = "<mcp_exec_runtime>";
  mod.attr("__file__") = filename;
  py::object code = builtins.attr("compile")(py::str(kRuntimeSource), filename, "exec");
  builtins.attr("exec")(code, mod.attr("__dict__"));
  py::module_::import("sys").attr("modules")["mcp_exec_runtime"] = mod;
  return mod;
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
  close(g_status_fd);
  _exit(status);
}

[[noreturn]] void RunnerExecute(const Zygote& z, const wire::RunParams& params,
                                const std::vector<int>& fds) {
  std::string code = ReadAll(fds[wire::kCode]);
  std::string error, cwd;
  timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  bool locked =
      sandbox::LockdownFinish(z.sandbox, &g_lock, params.workdir, params.timeout_s, &cwd, &error);
  g_lockdown_us = MicrosSince(t0);
  // Then only the run's fds are left (whatever the lockdown still held, such
  // as a prepared ruleset, goes too); no code of the caller has run yet.
  g_status_fd = sandbox::fds::StatusFd(z.sandbox.limits.max_open_files);
  if (!sandbox::fds::ApplyInRunner(fds, g_status_fd)) _exit(126);
  // Never run code half locked down: the supervisor turns a failed verdict
  // into a tool error naming the layer.
  WriteVerdict(locked, error);
  if (!locked) Finish(125, wire::kReasonNone);
  int status = 1;
  uint32_t reason = wire::kReasonNone;
  try {
    py::object rt = py::module_::import("sys").attr("modules")["mcp_exec_runtime"];
    py::tuple result = rt.attr("run")(py::str(code), py::str(cwd));
    status = result[0].cast<int>();
    if (result[1].cast<std::string>() == "memory") reason = wire::kReasonMemory;
  } catch (py::error_already_set& e) {
    e.restore();
    PyErr_Print();
    status = 1;
  }
  Finish(status, reason);
}

void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

bool ParseRun(const std::string& payload, const std::vector<int>& fds, wire::RunParams* params) {
  if (fds.size() != wire::kRunFdCount || payload.size() != sizeof(wire::RunParams)) return false;
  memcpy(params, payload.data(), sizeof *params);
  params->workdir[sizeof params->workdir - 1] = '\0';
  return true;
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
  PyOS_BeforeFork();
  pid_t pid = clone_flags == 0 ? fork()
                               : static_cast<pid_t>(syscall(SYS_clone, clone_flags | SIGCHLD,
                                                            nullptr, nullptr, nullptr, nullptr));
  if (pid == 0) {
    PyOS_AfterFork_Child();
    RunnerPrepare(z, child_expects_parent);
    return 0;
  }
  int err = errno;
  PyOS_AfterFork_Parent();
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
    wire::Header h;
    std::string payload;
    std::vector<int> fds;
    wire::RunParams params;
    if (wire::Receive(sv[1], &h, &payload, &fds) <= 0 || h.type != wire::Type::kRun ||
        !ParseRun(payload, fds, &params)) {
      _exit(0);  // retired unused
    }
    close(sv[1]);
    RunnerExecute(z, params, fds);
  }
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    z.spare_fork_failed = true;
    return;
  }
  z.spares.push_back({pid, sv[0], cgroup});
}

void ReplenishSpares(Zygote& z) {
  while (!z.spare_fork_failed && z.spares.size() < z.want_spares) ForkSpare(z);
}

// Hands the run to a spare; false if none could take it. *sock: where the
// spare's init reports (kept until the run is reaped).
bool HandToSpare(Zygote& z, const wire::Header& h, const std::string& payload,
                 const std::vector<int>& fds, pid_t* pid, int* sock, std::string* cgroup) {
  while (!z.spares.empty()) {
    Spare sp = z.spares.front();
    z.spares.pop_front();
    bool ok = wire::Send(sp.sock, h, payload.data(), payload.size(), fds.data(),
                         static_cast<int>(fds.size()));
    if (ok) {
      *pid = sp.pid;
      *sock = sp.sock;
      *cgroup = sp.cgroup;
      return true;
    }
    close(sp.sock);
    kill(sp.pid, SIGKILL);  // a spare that cannot take work is retired
    z.retired.push_back({sp.pid, -1, sp.cgroup});
  }
  return false;
}

void StartRun(Zygote& z, const wire::Header& h, const std::string& payload,
              const std::vector<int>& fds) {
  auto fail = [&](int err, const std::string& what) {
    wire::Header r{wire::Type::kStartFailed, 0, h.run_id, err};
    wire::Send(z.control, r, what.data(), what.size(), nullptr, 0);
  };
  wire::RunParams params;
  if (!ParseRun(payload, fds, &params)) {
    CloseAll(fds);
    return fail(EPROTO, "malformed run request");
  }
  pid_t pid = 0;
  int sock = -1;
  std::string cgroup;
  if (!HandToSpare(z, h, payload, fds, &pid, &sock, &cgroup)) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      int err = errno;
      CloseAll(fds);
      return fail(err, std::string("socketpair: ") + strerror(err));
    }
    std::string error;
    pid = ForkSandboxed(z, sv[1], &cgroup, &error);
    if (pid == 0) {
      close(sv[0]);
      close(sv[1]);
      RunnerExecute(z, params, fds);
    }
    int err = errno;
    close(sv[1]);
    if (pid < 0) {
      close(sv[0]);
      CloseAll(fds);
      return fail(err, error);
    }
    sock = sv[0];
  }
  CloseAll(fds);
  z.runners[pid] = {h.run_id, sock, cgroup};
  wire::Header r{wire::Type::kStarted, 0, h.run_id, pid};
  wire::Send(z.control, r, nullptr, 0, nullptr, 0);
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
      close(it->sock);
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
  uint32_t flags = 0;
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
  std::vector<int> fds;
  int r = wire::ReceiveNow(sock, &rh, &payload, &fds);
  CloseAll(fds);
  if (r <= 0 || rh.type != wire::Type::kExited) return false;
  *status = static_cast<int>(rh.value);
  return true;
}

void ReadReaperReport(Zygote& z, pid_t pid) {
  auto it = z.runners.find(pid);
  if (it == z.runners.end() || it->second.reported) return;
  int status;
  if (ReceiveInitReport(it->second.sock, &status)) ReportExit(z, it->second, status);
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
    Zygote::Run run = it->second;
    z.runners.erase(it);
    // The run's init reported the runner's own status before it exited.
    if (!run.reported && run.sock >= 0) ReceiveInitReport(run.sock, &status);
    if (!run.reported) ReportExit(z, run, status);
    if (run.sock >= 0) close(run.sock);
    if (!run.cgroup.empty()) sandbox::cgroups::Destroy(z.sandbox.cgroups, run.cgroup);
    runner_ended = true;
  }
  // Whatever a finished run left behind was re-parented to us: end it.
  if (runner_ended) KillChildrenExcept(z.self, LiveRunners(z));
}

[[noreturn]] void Serve(Zygote& z, int sigfd) {
  for (;;) {
    ReplenishSpares(z);
    std::vector<pollfd> pfds = {{z.control, POLLIN, 0}, {sigfd, POLLIN, 0}};
    std::vector<pid_t> reapers;  // runs whose init may report on its socket
    for (auto& [pid, run] : z.runners) {
      if (run.sock < 0 || run.reported || !z.sandbox.run_pidns) continue;
      pfds.push_back({run.sock, POLLIN, 0});
      reapers.push_back(pid);
    }
    if (poll(pfds.data(), pfds.size(), -1) < 0) {
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
    if (pfds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      wire::Header h;
      std::string payload;
      std::vector<int> fds;
      int r = wire::Receive(z.control, &h, &payload, &fds);
      if (r <= 0) {
        // The supervisor is gone or closed us: nothing may outlive it.
        for (auto& [pid, run] : z.runners) KillTree(pid, true);
        for (const Spare& sp : z.spares) kill(sp.pid, SIGKILL);
        KillChildrenExcept(z.self, {});
        _exit(0);
      }
      if (h.type == wire::Type::kRun)
        StartRun(z, h, payload, fds);
      else if (h.type == wire::Type::kKill)
        KillRun(z, h.run_id), CloseAll(fds);
      else
        CloseAll(fds);
    }
  }
}

}  // namespace

int ZygoteMain(int argc, char** argv) {
  Zygote z;
  pid_t supervisor = 0;
  uid_t outer_uid = 0;
  gid_t outer_gid = 0;
  sandbox::RunLimits& limits = z.sandbox.limits;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      size_t n = strlen(flag);
      return a.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    if (auto v = value("--control-fd=")) z.control = atoi(v);
    if (auto v = value("--supervisor=")) supervisor = atoi(v);
    if (auto v = value("--spares=")) z.want_spares = static_cast<size_t>(atoi(v));
    if (auto v = value("--ns=")) z.sandbox.ns_flags = sandbox::namespaces::ParseFlagNames(v);
    if (auto v = value("--outer-uid=")) outer_uid = static_cast<uid_t>(atol(v));
    if (auto v = value("--outer-gid=")) outer_gid = static_cast<gid_t>(atol(v));
    if (auto v = value("--memory-bytes=")) limits.memory_bytes = atoll(v);
    if (auto v = value("--disk-bytes=")) limits.disk_bytes = atoll(v);
    if (auto v = value("--max-processes=")) limits.max_processes = atoll(v);
    if (auto v = value("--max-open-files=")) limits.max_open_files = atoll(v);
    sandbox::cgroups::Delegation& cg = z.sandbox.cgroups;
    if (auto v = value("--cgroup-version=")) cg.version = atoi(v);
    if (auto v = value("--cgroup-memory-dir=")) cg.memory_dir = v;
    if (auto v = value("--cgroup-pids-dir=")) cg.pids_dir = v;
    if (auto v = value("--cgroup-why-not-memory=")) cg.why_not_memory = v;
    if (auto v = value("--cgroup-why-not-pids=")) cg.why_not_pids = v;
  }
  if (z.control < 0 || supervisor <= 0) {
    fprintf(stderr, "mcp-exec __zygote is started by the server, not by hand\n");
    return 2;
  }
  fcntl(z.control, F_SETFD, FD_CLOEXEC);
  {
    // fds 4 and 5: the runs' cgroup parents, where the server has them.
    sandbox::cgroups::Delegation& cg = z.sandbox.cgroups;
    cg.memory_fd = cg.memory_dir.empty() ? -1 : 4;
    cg.pids_fd = cg.pids_dir.empty() ? -1 : (cg.version == 2 ? cg.memory_fd : 5);
    for (int fd : {4, 5}) {
      if (fd != cg.memory_fd && fd != cg.pids_fd)
        close(fd);
      else
        fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    sandbox::cgroups::Probe(&cg, z.sandbox.limits);
  }
  // Die with the supervisor, whatever kills it. In a new pid namespace our
  // parent is invisible (getppid() is 0); the control socket's EOF ends us too.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Die("prctl(PR_SET_PDEATHSIG)");
  pid_t parent = getppid();
  if (parent != supervisor && parent != 0) _exit(1);
  setsid();
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) Die("prctl(PR_SET_CHILD_SUBREAPER)");
  z.self = getpid();
  z.sandbox.zygote_pid = z.self;
  std::string ns_error;
  if (!sandbox::namespaces::FinishInZygote(z.sandbox.ns_flags, outer_uid, outer_gid, &ns_error)) {
    // The supervisor retries with fewer namespaces.
    wire::Header h{wire::Type::kFatal, 0, 0, wire::kFatalNamespaces};
    wire::Send(z.control, h, ns_error.data(), ns_error.size(), nullptr, 0);
    _exit(1);
  }
  // Same-uid processes (a run, in the container posture) may not read our
  // memory or /proc files. Not before the id maps: a non-dumpable process
  // cannot write its own /proc/self/uid_map.
  if (prctl(PR_SET_DUMPABLE, 0) != 0) Die("prctl(PR_SET_DUMPABLE, 0)");
  if (!sandbox::namespaces::ProbeRunNamespaces(z.sandbox.ns_flags, &z.sandbox.run_pidns,
                                               &z.sandbox.run_netns)) {
    Die("probe of the runs' namespaces");
  }
  sandbox::PrepareEarly(&z.sandbox);

  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &z.original_mask);
  sigdelset(&z.original_mask, SIGCHLD);
  int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) Die("signalfd");
  z.sigfd = sigfd;

  InitPython();
  std::string report;
  try {
    py::object rt = LoadRuntime();
    py::object result = rt.attr("warm_up")();
    report = py::module_::import("json").attr("dumps")(result).cast<std::string>();
  } catch (py::error_already_set& e) {
    SendFatal(z.control, std::string("python warm-up failed: ") + e.what());
    _exit(1);
  }
  int tasks = CountTasks();
  if (tasks != 1) {
    SendFatal(z.control, "after warm-up the zygote runs " + std::to_string(tasks) +
                             " threads; a native thread pool was not pinned to one thread");
    _exit(1);
  }
  sandbox::PrepareLate(&z.sandbox);
  if ((z.sandbox.ns_flags & CLONE_NEWNS) && !z.sandbox.minimal_root) {
    // Never serve from a view half made: the supervisor tries fewer namespaces.
    std::string why = "the runs' minimal root could not be made: " + z.sandbox.readonly_error;
    wire::Header h{wire::Type::kFatal, 0, 0, wire::kFatalNamespaces};
    wire::Send(z.control, h, why.data(), why.size(), nullptr, 0);
    _exit(1);
  }
  nlohmann::json full = nlohmann::json::parse(report);
  full["sandbox"] = {{"namespaces", sandbox::namespaces::FlagNames(z.sandbox.ns_flags)},
                     {"layers", sandbox::ToJson(sandbox::Report(z.sandbox))}};
  report = full.dump();
  wire::Header ready{wire::Type::kReady, 0, 0, z.self};
  if (!wire::Send(z.control, ready, report.data(), report.size(), nullptr, 0)) Die("send ready");
  Serve(z, sigfd);
}

}  // namespace mcpexec
