// The limits every run gets, as one struct carried from the config
// (RunLimitsOf, model/config.h) through the zygote's arguments
// (ipc/zygote_args.h) to the sandbox (sandbox/limits.h applies them),
// and one table of the configurable ones that the zygote's arguments, the
// start log and `doctor` are all made from. A new runner-side limit is a
// field and a row here, its option in model/config.{h,cc}, where the sandbox
// applies it, and the README.
#pragma once

#include <cstdint>
#include <string>

namespace mcpexec {

struct RunLimits {
  int64_t memory_bytes = 0;
  int64_t disk_bytes = 0;              // workdir size / largest file
  int64_t scratch_bytes = 64ll << 20;  // private /tmp and /dev/shm each
  int64_t max_processes = 0;
  int64_t max_open_files = 0;
  uint32_t sandbox_uid = 65532;
  uint32_t sandbox_gid = 65532;
};

// RLIMIT_NPROC counts every process of the sandbox uid, all runs together,
// so the zygote holds runs to shares of max_processes (beyond what each
// needs of its own: its interpreter, and the init of its pid namespace):
// the Python sessions together, for what they keep between calls, and all
// runs together while more than one is going (zygote.cc, WatchRuns). The
// supervisor says the same numbers to a run it so ended.
constexpr int64_t SessionsHeldBound(int64_t max_processes) { return max_processes / 2; }
constexpr int64_t RunsHeldBound(int64_t max_processes) { return max_processes * 3 / 4; }

// One configurable limit: its zygote argument (--arg=N), its name in the
// start log's and doctor's "run" limits (the value shifted right by
// `shift`: bytes shown as MiB), and its words in doctor's text ("{}" is the
// value so shown).
struct RunLimitField {
  const char* arg;
  int64_t RunLimits::*field;
  const char* name;
  int shift;
  const char* text;

  int64_t Shown(const RunLimits& l) const { return l.*field >> shift; }
  std::string Text(const RunLimits& l) const {
    std::string t = text;
    return t.replace(t.find("{}"), 2, std::to_string(Shown(l)));
  }
};

inline constexpr RunLimitField kRunLimitFields[] = {
    {"memory-bytes", &RunLimits::memory_bytes, "memory_limit_mb", 20, "memory {} MiB"},
    {"disk-bytes", &RunLimits::disk_bytes, "disk_limit_mb", 20, "disk {} MiB"},
    {"max-processes", &RunLimits::max_processes, "max_processes", 0, "{} processes"},
    {"max-open-files", &RunLimits::max_open_files, "max_open_files", 0, "{} open files"},
};

}  // namespace mcpexec
