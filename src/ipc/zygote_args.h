// How the supervisor starts the zygote: the command line of
// `mcp-exec __zygote`, written and read by the one definition here so that
// the two sides cannot disagree on a name, and read strictly (a malformed
// value stops the zygote instead of becoming 0).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/run_limits.h"

namespace mcpexec {

// Runners forked in advance: up to one per concurrent run, at most this many.
constexpr int64_t kMaxSpares = 4;
inline int64_t SparesFor(int64_t max_concurrent) {
  return max_concurrent < kMaxSpares ? max_concurrent : kMaxSpares;
}

// The fds the zygote inherits.
constexpr int kZygoteControlFd = 3;       // SOCK_SEQPACKET to the supervisor
constexpr int kZygoteMemoryCgroupFd = 4;  // the runs' memory cgroup parent, if any
constexpr int kZygotePidsCgroupFd = 5;    // the runs' pids cgroup parent (v1), if any

// What a run sends back besides its streams: the runtime keeps to these (it
// gets them by name), and the supervisor enforces them on what it reads.
struct OutputLimits {
  int64_t max_images = 0, max_image_bytes = 0, max_out_files = 0, max_out_bytes = 0,
          max_result_bytes = 0, max_image_side = 0;
  // out/ files past max_out_bytes come back as links to the resource
  // store, up to this many bytes together (0: none, they are omitted).
  int64_t max_link_bytes = 0;
  // Code mode: the largest frame a run may send on its tool channel (the
  // runtime refuses bigger arguments itself, keeping the channel open);
  // 0: the server has no upstreams.
  int64_t max_tool_frame_bytes = 0;
  // Code mode: the calls of one run answered side by side (the runtime
  // keeps as many threads for awaited calls).
  int64_t max_tool_calls_in_flight = 0;
  // The most the supervisor keeps of a results pipe: every bound plus room
  // for the records' headers.
  int64_t KeepBytes() const;
  // {"max_images": ..., ...}: the runtime's names.
  std::map<std::string, int64_t> ByName() const;
};

struct ZygoteArgs {
  pid_t supervisor = 0;
  int64_t spares = 0;
  std::string namespaces;  // sandbox::namespaces::FlagNames()
  uid_t outer_uid = 0;
  gid_t outer_gid = 0;
  // The limits of every run (the configurable ones: kRunLimitFields).
  RunLimits limits;
  OutputLimits output;
  // 1: the warmed heap is moved onto transparent huge pages before the first
  // fork (fewer page-table entries to copy per fork and to free per exit).
  int64_t huge_pages = 0;
  // 1: a spare takes the copy-on-write faults of common snippets before its
  // run arrives (embed::Prefault).
  int64_t prefault = 0;
  // Modules to import and warm after the promised packages (comma-separated).
  std::string preload;
  // site-packages folders added to the runtime's sys.path, ':'-separated
  // (from MCP_EXEC_PYTHON: python_env::Probe).
  std::string site;
  // Host folders in every run: mounts::Format of the checked MCP_EXEC_MOUNTS.
  std::string mounts;
  // The runs' cgroups, as the supervisor found them (sandbox::cgroups::Detect).
  int64_t cgroup_version = 0;
  std::string cgroup_memory_dir, cgroup_pids_dir, cgroup_why_not_memory, cgroup_why_not_pids;

  // argv for execve, argv[0] and the "__zygote" command included.
  std::vector<std::string> ToArgv() const;
  // Reads argv as main() got it; false with *error naming the bad argument.
  static bool Parse(int argc, char** argv, ZygoteArgs* out, std::string* error);
};

}  // namespace mcpexec
