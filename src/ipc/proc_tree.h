// Process trees read from /proc, for killing everything a run started when
// the host gives us no pid namespace. The runner is a child subreaper, so
// nothing it starts can leave its subtree while it lives (setsid and double
// forks included); once it is gone, orphans land on the zygote (also a
// subreaper), which kills whatever is not a live runner.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <vector>

namespace mcpexec {

// All live (non-zombie) descendants of root, root excluded.
std::vector<pid_t> Descendants(pid_t root);
// The live direct children of parent.
std::vector<pid_t> Children(pid_t parent);
// What a process tree uses: the CPU time (user and system, in clock ticks)
// the root and its live descendants used, and the children each of them
// reaped; and their threads, every one, zombies included as one each (what
// RLIMIT_NPROC counts).
// cpu_ticks is -1 when the root is gone.
struct TreeUse {
  int64_t cpu_ticks = -1;
  int64_t tasks = 0;
};
// For each root, what its tree uses. One pass over /proc serves them all.
std::vector<TreeUse> TreeUsage(const std::vector<pid_t>& roots);

// SIGKILLs root's descendants, in rounds until none is left alive (a fork
// racing with the kill is caught in the next round), then root itself if
// include_root. Each kill goes through a pidfd opened while the process is
// still known to be in the tree, so a recycled pid is never hit.
void KillTree(pid_t root, bool include_root);

// Kills every child of `parent` (and its subtree) that is not in `keep`.
// Returns the number of processes killed.
int KillChildrenExcept(pid_t parent, const std::set<pid_t>& keep);

}  // namespace mcpexec
