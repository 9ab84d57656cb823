// The cgroup layer: where the host gives the server a cgroup it may write,
// every run gets a child cgroup of it whose limits hold for the run as a
// whole (all its processes, its tmpfs and shared memory, its page cache),
// where rlimits only bound one process at a time. Only ever below the cgroup
// the server was started in (never the host's root or anyone else's), and
// removed with the run.
//
// cgroup v1 (memory and pids controllers mounted separately, as on this
// project's CI host) and v2 (one unified hierarchy, whose subtree the
// operator delegated) are both handled. The supervisor finds the server's
// own cgroups and makes a parent for its runs (mcp-exec-<pid>); the zygote
// gets directory fds of those parents (opened in the host's mount
// namespace, so its read-only view does not matter), makes one child per
// runner, and the runner's first process joins it before anything else.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "sandbox/layers.h"

namespace mcpexec::sandbox::cgroups {

struct Delegation {
  int version = 0;                           // 1 or 2; 0: no controller can be used
  int memory_fd = -1;                        // directory fd of the runs' parent for memory
  int pids_fd = -1;                          // and for pids (v2: the same directory as memory)
  std::string memory_dir, pids_dir;          // their paths, for the report
  std::string why_not_memory, why_not_pids;  // when a controller is not used
};

// Supervisor, at start (single-threaded): finds the server's own cgroups,
// checks they are not a root, makes the parents and opens them. Removes
// parents that earlier servers left (their pid is gone and they are empty).
Delegation Detect();
// Supervisor, at exit: removes the parents (the runs' children are gone).
void RemoveParents(const Delegation& d);

// Zygote: a child cgroup `name` for one runner, with the run's limits.
bool Create(const Delegation& d, const RunLimits& limits, const std::string& name,
            std::string* error);
// The runner's first process, right after the fork: moves itself in.
bool Join(const Delegation& d, const std::string& name, std::string* error);
// Zygote, once the runner is reaped: whether the kernel killed something in
// it for memory; then the child cgroup is removed.
bool OomKilled(const Delegation& d, const std::string& name);
// How many times the kernel killed something in cgroup `name` for memory so
// far (0 without the memory controller). The supervisor reads it around
// each cell of a session, whose cgroup outlives its cells.
int64_t OomKills(const Delegation& d, const std::string& name);
void Destroy(const Delegation& d, const std::string& name);
// The tasks (processes and threads, zombies too) in cgroup `name` now, by
// the pids controller; -1 without it.
int64_t PidsCurrent(const Delegation& d, const std::string& name);

// Zygote, at start: a child made, joined by a throw-away process, removed.
// On failure the layer is off (d->version = 0) and d->why_not_memory says why.
void Probe(Delegation* d, const RunLimits& limits);

LayerStatus Report(const Delegation& d, const RunLimits& limits);

}  // namespace mcpexec::sandbox::cgroups
