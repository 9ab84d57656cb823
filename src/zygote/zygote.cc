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

#include "base/text.h"
#include "base/unique_fd.h"
#include "embed/python.h"
#include "ipc/control.h"
#include "ipc/proc_tree.h"
#include "ipc/zygote_args.h"
#include "model/config.h"
#include "model/run_limits.h"
#include "sandbox/cgroups.h"
#include "sandbox/credentials.h"
#include "sandbox/fds.h"
#include "sandbox/limits.h"
#include "sandbox/lockdown.h"
#include "sandbox/namespaces.h"
#include "zygote/runner.h"
#include "zygote/zygote_state.h"

namespace mcpexec {

namespace {

// How long the zygote waits before it tries again to fork the spares it
// lacks, when the last attempt failed or a spare died idle.
constexpr int kSpareRetryMs = 250;

void Die(const char* what) {
  // Before Python is up, stderr is the supervisor's stderr.
  fprintf(stderr,
          "{\"level\":\"error\",\"event\":\"zygote_fatal\",\"what\":\"%s\",\"errno\":\"%s\"}\n",
          what, strerror(errno));
  _exit(1);
}

void SendFatal(int control, const std::string& why) {
  ipc::Header h{ipc::Type::kFatal, 0, 0, 0};
  ipc::Send(control, h, why.data(), std::min(why.size(), ipc::kMaxPayload), nullptr, 0);
}

void ForkSpare(Zygote& z) {
  UniqueFd ours, theirs;
  if (!MakeSocketPair(SOCK_SEQPACKET | SOCK_CLOEXEC, &ours, &theirs)) {
    z.spare_fork_failed = true;
    return;
  }
  std::string error, cgroup;
  pid_t pid = ForkSandboxed(z, theirs.get(), &cgroup, &error);
  if (pid == 0) {
    ours.Reset();
    SpareMain(z, std::move(theirs));
  }
  theirs.Reset();
  if (pid < 0) {
    z.spare_fork_failed = true;
    return;
  }
  z.spares.push_back({pid, std::move(ours), cgroup});
}

// The spares are forked when the zygote has no one-shot run going, so that
// a fork (milliseconds of copying page tables here) neither takes a CPU from
// a run nor delays the report of its end: the next spare is made once the
// last run is reaped, after its answer. Only when none is left does a spare
// come at once. A session's interpreter between its cells is no run going.
void ReplenishSpares(Zygote& z) {
  if (!z.spares.empty()) {
    for (const auto& [pid, run] : z.runners) {
      if (run.cpu_bound_ticks == 0) return;
    }
  }
  while (!z.spare_fork_failed && z.spares.size() < z.want_spares) ForkSpare(z);
}

// Hands the run to a spare; false if none could take it. *sock: where the
// spare's init reports (kept until the run is reaped). cells: a session's
// cell socket (the interpreter's end), or -1.
bool HandToSpare(Zygote& z, const ipc::Header& h, const std::string& payload,
                 const std::vector<UniqueFd>& fds, int cells, pid_t* pid, UniqueFd* sock,
                 std::string* cgroup) {
  std::vector<int> raw;
  for (const UniqueFd& fd : fds) raw.push_back(fd.get());
  if (cells >= 0) raw.push_back(cells);
  while (!z.spares.empty()) {
    Spare sp = std::move(z.spares.front());
    z.spares.pop_front();
    bool ok = ipc::Send(sp.sock.get(), h, payload.data(), payload.size(), raw.data(),
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
void StartRun(Zygote& z, const ipc::Header& h, const std::string& payload,
              std::vector<UniqueFd> fds) {
  auto fail = [&](int err, const std::string& what) {
    ipc::Header r{ipc::Type::kStartFailed, 0, h.run_id, err};
    ipc::Send(z.control, r, what.data(), what.size(), nullptr, 0);
  };
  ipc::RunParams params;
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
    UniqueFd theirs;
    if (!MakeSocketPair(SOCK_SEQPACKET | SOCK_CLOEXEC, &sock, &theirs)) {
      int err = errno;
      return fail(err, std::string("socketpair: ") + strerror(err));
    }
    std::string error;
    pid = ForkSandboxed(z, theirs.get(), &cgroup, &error);
    if (pid == 0) {
      sock.Reset();
      theirs.Reset();
      if (runner_cells) fds.push_back(std::move(runner_cells));
      RunnerExecute(z, params, std::move(fds));
    }
    int err = errno;
    theirs.Reset();
    if (pid < 0) return fail(err, error);
  }
  const bool session = static_cast<bool>(cells);
  z.runners[pid] = {h.run_id, std::move(sock), cgroup, false, std::move(cells)};
  // The run's cgroup, by name: the supervisor reads a session's memory
  // events there between its cells.
  ipc::Header r{ipc::Type::kStarted, 0, h.run_id, pid};
  ipc::Send(z.control, r, cgroup.data(), cgroup.size(), nullptr, 0);
  // After the answer: reading the run's CPU scans /proc, off the call's path.
  if (session) z.runners[pid].cpu_bound_ticks = CpuBoundTicks(pid, params.timeout_s);
  // A run that starts beside others finds the share they left it soon, not
  // at the next pass: as soon as the zygote is idle (after the next spare's
  // fork, and off the path of calls arriving back to back).
  if (z.runners.size() > 1) z.watch_when_idle = true;
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
void ForwardCell(Zygote& z, const ipc::Header& h, const std::string& payload,
                 const std::vector<UniqueFd>& fds) {
  ipc::RunParams params;
  if (!ParseRun(payload, fds, &params)) return;
  for (auto& [pid, run] : z.runners) {
    if (run.run_id != h.run_id || !run.cells) continue;
    std::vector<int> raw;
    for (const UniqueFd& fd : fds) raw.push_back(fd.get());
    if (!ipc::Send(run.cells.get(), h, payload.data(), payload.size(), raw.data(),
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
    flags |= ipc::kExitedOomKilled;
  }
  ipc::Header r{ipc::Type::kExited, flags, run.run_id, status};
  ipc::Send(z.control, r, nullptr, 0, nullptr, 0);
  run.reported = true;
}

// A run's init reports the runner's status as soon as it has reaped it:
// answered then, the call does not also wait for the init's own exit.
// The runner's wait status, if the run's init has reported it on sock.
bool ReceiveInitReport(int sock, int* status) {
  ipc::Header rh;
  std::string payload;
  int r = ipc::ReceiveNow(sock, &rh, &payload, nullptr);
  if (r <= 0 || rh.type != ipc::Type::kExited) return false;
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
    ipc::Header gone{ipc::Type::kReaped, 0, run.run_id, 0};
    ipc::Send(z.control, gone, nullptr, 0, nullptr, 0);
    if (!run.cgroup.empty()) sandbox::cgroups::Destroy(z.sandbox.cgroups, run.cgroup);
    runner_ended = true;
  }
  // Whatever a finished run left behind was re-parented to us: end it.
  if (runner_ended) KillChildrenExcept(z.self, LiveRunners(z));
}

// One message from the supervisor; its EOF ends the zygote and every run.
void CountAfterCell(Zygote& z, uint64_t run_id);

void OnControlMessage(Zygote& z) {
  ipc::Header h;
  std::string payload;
  std::vector<UniqueFd> fds;
  if (ipc::Receive(z.control, &h, &payload, &fds) <= 0) {
    // The supervisor is gone or closed us: nothing may outlive it.
    for (auto& [pid, run] : z.runners) KillTree(pid, true);
    for (const Spare& sp : z.spares) kill(sp.pid, SIGKILL);
    KillChildrenExcept(z.self, {});
    _exit(0);
  }
  if (h.type == ipc::Type::kRun) {
    StartRun(z, h, payload, std::move(fds));
  } else if (h.type == ipc::Type::kKill) {
    KillRun(z, h.run_id);
  } else if (h.type == ipc::Type::kCell) {
    ForwardCell(z, h, payload, fds);
  } else if (h.type == ipc::Type::kInterrupt) {
    InterruptRun(z, h.run_id);
  } else if (h.type == ipc::Type::kCount) {
    CountAfterCell(z, h.run_id);
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
// holding the most is ended. A one-shot run did the same for its whole
// timeout: while another run is going, all runs together may hold at most
// three quarters of it, and while they hold more, the run holding the most
// is ended. A run alone may use all of it (a pool as wide as the bound).
// The kernel cannot count per run here: RLIMIT_NPROC counts per uid (and
// user namespace), and a pids cgroup needs a delegation that Docker does
// not give; so the zygote counts, once a second and whenever a run starts
// beside others.
constexpr auto kWatchEvery = std::chrono::seconds(1);

// Ends runs[i] for `why` (a kExited flag) and takes what it held off `total`.
void EndHolder(std::vector<Zygote::Run*>& runs, std::vector<int64_t>& held, size_t i, uint32_t why,
               int64_t* total) {
  runs[i]->ended_by = why;
  *total -= std::exchange(held[i], 0);
}

void WatchRuns(Zygote& z) {
  std::vector<pid_t> pids;
  std::vector<Zygote::Run*> runs;
  std::vector<uint64_t> ended;
  for (auto& [pid, run] : z.runners) {
    // Killed on an earlier pass and not yet reaped: killed again, for a
    // tree found in /proc may have forked meanwhile.
    if (run.ended_by != 0) {
      ended.push_back(run.run_id);
      continue;
    }
    pids.push_back(pid);
    runs.push_back(&run);
  }
  const std::vector<TreeUse> use = pids.empty() ? std::vector<TreeUse>() : TreeUsage(pids);
  // What every run has of its own: the interpreter's main thread and its
  // output flusher (embed/python.cc), and the init of its pid namespace;
  // there a one-shot run also its memory holder (runner.cc). Measured: an idle
  // session's tree is 3 tasks with a pid namespace.
  const int64_t own = z.sandbox.run_pidns ? 3 : 2;
  std::vector<int64_t> held(runs.size());
  int64_t total = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const bool session = runs[i]->cpu_bound_ticks > 0;
    if (session && use[i].cpu_ticks > runs[i]->cpu_bound_ticks) {
      runs[i]->ended_by = ipc::kExitedCpuBound;
      continue;
    }
    const int64_t holder = !session && z.sandbox.run_pidns ? 1 : 0;
    held[i] = std::max<int64_t>(use[i].tasks - own - holder, 0);
    total += held[i];
  }
  // The sessions' share first: what they hold between calls is the longest
  // lived.
  int64_t sessions = 0;
  std::vector<int64_t> session_held(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i]->cpu_bound_ticks > 0) sessions += session_held[i] = held[i];
  }
  const int64_t sessions_bound = SessionsHeldBound(z.sandbox.limits.max_processes);
  while (sessions_bound > 0 && sessions > sessions_bound) {
    size_t most = std::max_element(session_held.begin(), session_held.end()) - session_held.begin();
    sessions -= std::exchange(session_held[most], 0);
    EndHolder(runs, held, most, ipc::kExitedHeldProcesses, &total);
  }
  size_t live = 0;
  for (const Zygote::Run* run : runs) live += run->ended_by == 0;
  const int64_t runs_bound = RunsHeldBound(z.sandbox.limits.max_processes);
  while (runs_bound > 0 && live > 1 && total > runs_bound) {
    size_t most = std::max_element(held.begin(), held.end()) - held.begin();
    EndHolder(runs, held, most, ipc::kExitedRunsHeldProcesses, &total);
    --live;
  }
  for (const Zygote::Run* run : runs) {
    if (run->ended_by != 0) ended.push_back(run->run_id);
  }
  for (uint64_t id : ended) KillRun(z, id);
}

// A session's cell has ended (issue 36, point 9): what it left behind (44
// sleeping children) counts now, before the cell is answered and before the
// next run forks, not at the next pass up to a second later. A session
// whose pids cgroup shows it holds nothing beyond its own skips the /proc
// scan (the common cell, on the path of every session call); the answer
// says whether the count ended it.
void CountAfterCell(Zygote& z, uint64_t run_id) {
  Zygote::Run* run = nullptr;
  for (auto& [pid, r] : z.runners) {
    if (r.run_id == run_id) run = &r;
  }
  if (run && run->ended_by == 0) {
    const int64_t own = z.sandbox.run_pidns ? 3 : 2;
    const int64_t tasks = sandbox::cgroups::PidsCurrent(z.sandbox.cgroups, run->cgroup);
    if (tasks < 0 || tasks > own) WatchRuns(z);
  }
  // Ended by this count, or by a once-a-second pass that came between the
  // cell's end and this count (killed, not yet reaped): either way the
  // answer waits for its end and says why.
  const int64_t ended = run && run->ended_by != 0 ? 1 : 0;
  ipc::Header r{ipc::Type::kCounted, 0, run_id, ended};
  ipc::Send(z.control, r, nullptr, 0, nullptr, 0);
}

// The watch runs while a session lives (its bounds hold between calls) or
// more than one run goes (their processes share one budget).
bool NeedsWatch(const Zygote& z) {
  if (z.runners.size() > 1) return true;
  for (const auto& [pid, run] : z.runners) {
    if (run.cpu_bound_ticks > 0) return true;
  }
  return false;
}

[[noreturn]] void Serve(Zygote& z, int sigfd) {
  auto next_watch = std::chrono::steady_clock::now() + kWatchEvery;
  for (;;) {
    if (std::chrono::steady_clock::now() >= next_watch) {
      WatchRuns(z);
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
    if (z.watch_when_idle) {
      timeout_ms = 0;
    } else if (NeedsWatch(z)) {
      auto until = std::chrono::duration_cast<std::chrono::milliseconds>(
                       next_watch - std::chrono::steady_clock::now())
                       .count();
      int watch_ms = static_cast<int>(std::clamp<int64_t>(until, 0, 1000));
      timeout_ms = timeout_ms < 0 ? watch_ms : std::min(timeout_ms, watch_ms);
    }
    const int ready = poll(pfds.data(), pfds.size(), timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      Die("poll");
    }
    if (ready == 0 && z.watch_when_idle) {
      z.watch_when_idle = false;
      WatchRuns(z);
      next_watch = std::chrono::steady_clock::now() + kWatchEvery;
      continue;
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
  ipc::Header h{ipc::Type::kFatal, 0, 0, ipc::kFatalNamespaces};
  ipc::Send(z.control, h, why.data(), why.size(), nullptr, 0);
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
  std::vector<std::string> site;
  for (size_t start = 0; start < args.site.size();) {
    size_t end = args.site.find(':', start);
    if (end == std::string::npos) end = args.site.size();
    if (end > start) site.push_back(args.site.substr(start, end - start));
    start = end + 1;
  }
  if (!embed::InitInterpreter(args.huge_pages != 0, &error) ||
      !embed::WarmUp(preload, site, &report, &error)) {
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
  if (!z.sandbox.mounts_error.empty()) {
    // The operator's folders, not the host's namespaces: fewer namespaces
    // would only move them, so the server says why and stops.
    SendFatal(z.control, "MCP_EXEC_MOUNTS: " + z.sandbox.mounts_error);
    _exit(1);
  }
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
  nlohmann::json mounts = nlohmann::json::array();
  for (const sandbox::MountView& m : sandbox::Mounts(z.sandbox)) {
    mounts.push_back({{"path", m.path},
                      {"host_path", m.host},
                      {"mode", m.writable ? "rw" : "ro"},
                      {"exec", m.exec},
                      {"how", m.how},
                      {"metadata_guarded", m.metadata_guarded}});
  }
  full["sandbox"] = {{"namespaces", sandbox::namespaces::FlagNames(z.sandbox.ns_flags)},
                     {"layers", sandbox::ToJson(sandbox::Report(z.sandbox))},
                     {"mounts", mounts}};
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
  z.sandbox.limits = args.limits;
  if (std::string why = mounts::Parse(args.mounts, &z.sandbox.mounts); !why.empty()) {
    fprintf(stderr, "mcp-exec __zygote: mounts %s\n", why.c_str());
    return 2;
  }
  z.output_limits = args.output.ByName();
  z.prefault = static_cast<int>(args.prefault);
  fcntl(z.control, F_SETFD, FD_CLOEXEC);
  AdoptCgroupFds(z, args);
  BecomeZygote(z, args);
  sandbox::PrepareEarly(&z.sandbox);
  WatchChildren(z);
  std::string report = WarmUp(z, args);
  ipc::Header ready{ipc::Type::kReady, 0, 0, z.self};
  if (!ipc::Send(z.control, ready, report.data(), report.size(), nullptr, 0)) Die("send ready");
  Serve(z, z.sigfd);
}

}  // namespace mcpexec
