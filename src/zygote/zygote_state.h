// The zygote's state, shared by its serving loop (zygote.cc) and the runners
// it forks (runner.cc), which read what they need of it right after the
// fork. Internal to zygote/.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "sandbox/lockdown.h"

namespace mcpexec {

// A runner forked in advance, waiting on its socket for a run: the fork of
// the warmed image (milliseconds) happens between requests, not in one.
struct Spare {
  pid_t pid;
  UniqueFd sock;       // its init's report socket, once the spare has a run
  std::string cgroup;  // its cgroup's name, "" without the cgroup layer
};

// The zygote's state: its sockets, its live runs and spares, and what every
// runner inherits (the sandbox, the runtime's output limits).
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
    // A session's CPU bound, in clock ticks of the whole run (WatchRuns):
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
  bool watch_when_idle = false;  // a run started beside others: count their processes
  int prefault = 0;              // spares take common faults ahead: 1 the run's path, 2 also pandas
  sandbox::Sandbox sandbox;
};

}  // namespace mcpexec
