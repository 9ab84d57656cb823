// A runner's life from the fork to its exit (runner.cc reads as the ladder):
// what the zygote calls to fork one, and what a forked child runs.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "ipc/control.h"
#include "zygote/zygote_state.h"

namespace mcpexec {

// The threads of this process (/proc/self/task), or -1.
int CountTasks();

// A run request's parameters and fds, checked. with_cells: a session's
// first run, handed to a spare, also carries the socket its further cells
// will arrive on (last).
bool ParseRun(const std::string& payload, const std::vector<UniqueFd>& fds, ipc::RunParams* params,
              bool with_cells = false);

// Forks a sandboxed process: returns 0 in the runner; in the zygote, the
// pid to watch (the run's init when runs get a pid namespace of their own),
// or -1 with *error. reaper_sock: where that init reports the runner's wait
// status. *cgroup: the run's cgroup, "" without the cgroup layer.
pid_t ForkSandboxed(Zygote& z, int reaper_sock, std::string* cgroup, std::string* error);

// In a spare (forked ahead, returned 0 from ForkSandboxed): its lockdown as
// far as it goes without the run, then its run from sock. Never returns.
[[noreturn]] void SpareMain(const Zygote& z, UniqueFd sock);

// The run: the lockdown finished, the verdict, the caller's code, the exit.
// owned: the run's fds (kRunFds), a session's cell socket last.
[[noreturn]] void RunnerExecute(const Zygote& z, const ipc::RunParams& params,
                                std::vector<UniqueFd> owned);

}  // namespace mcpexec
