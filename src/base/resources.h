// What this process may really use: CPUs and memory as the kernel bounds
// them for it, not as the machine has them. Inside a container started with
// --cpus 1 --memory 256m, sysconf still counts the host's CPUs and memory;
// the bounds are the cgroup's (cpu.max or cpu.cfs_quota_us/cpu.cfs_period_us,
// memory.max or memory.limit_in_bytes, the tightest of the cgroup and its
// ancestors, v1 and v2) and the CPU affinity mask. The defaults of
// MCP_EXEC_MAX_CONCURRENT, MCP_EXEC_MEMORY_LIMIT_MB and
// MCP_EXEC_MAX_PY_SESSIONS are derived from these, and each says where its
// number came from (doctor, the start log).
#pragma once

#include <cstdint>
#include <string>

namespace mcpexec {

struct Resources {
  int64_t cpus = 1;         // whole CPUs this process may use (at least 1)
  std::string cpus_from;    // e.g. "cgroup v1 cpu.cfs_quota_us 100000 / cpu.cfs_period_us 100000"
  int64_t memory_mb = 0;    // memory this process may use, MiB
  std::string memory_from;  // e.g. "cgroup v2 memory.max (256 MiB)"
};

// Reads /proc/self/{cgroup,mountinfo,status}, the cgroup files and sysconf.
// `root` prefixes every path read (a fake tree in tests; "" for the real one);
// `online_cpus` and `physical_mb` stand for sysconf's answers (tests), or -1
// to ask sysconf. Never fails: what cannot be read does not bound.
Resources ReadResources(const std::string& root = "", int64_t online_cpus = -1,
                        int64_t physical_mb = -1);

// The process's resources, read once.
const Resources& ProcessResources();

// Where a cgroup hierarchy is mounted in this mount namespace: the mount
// point and the cgroup path the mount shows as its root. Empty point: not
// mounted. Shared with the per-run cgroups (sandbox/cgroups.cc).
struct CgroupMount {
  std::string point, root;
};
// The mount of a v1 controller ("memory", "cpu", "pids"), or of the v2
// hierarchy (controller ""). `prefix` goes in front of every path read (tests).
CgroupMount FindCgroupMount(const std::string& controller, const std::string& prefix = "");
// This process's cgroup path for a v1 controller, or for v2 ("").
std::string OwnCgroupPath(const std::string& controller, const std::string& prefix = "");
// The directory of the cgroup path `own` below mount m (the mount's root,
// when it is an ancestor of `own`, stripped).
std::string CgroupDir(const CgroupMount& m, const std::string& own);

// Parsers of one cgroup file's text, exposed for tests. Each returns -1 when
// the text sets no bound ("max", "-1", a value past any real machine).
int64_t ParseCpuMaxMilli(const std::string& cpu_max);  // v2 "quota period" -> thousandths of a CPU
int64_t ParseMemoryLimitMb(const std::string& limit);  // v1 or v2 byte count -> MiB
// Count of CPUs in a Cpus_allowed_list ("0-3,8,10-11" -> 7), or -1.
int64_t CountCpuList(const std::string& list);

}  // namespace mcpexec
