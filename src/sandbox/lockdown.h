// The order of the lockdown, one layer per file (sandbox/*.h): the zygote
// prepares once (PrepareEarly, PrepareLate); each spare runner applies what
// does not depend on its run (LockdownAhead); the runner finishes once its
// run is known (LockdownFinish), seccomp last. The zygote and its runners
// (zygote/zygote.cc, zygote/runner.cc) only call these, in that order.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "model/mounts.h"
#include "sandbox/cgroups.h"
#include "sandbox/layers.h"

namespace mcpexec::sandbox {

// What the zygote prepared; every runner inherits it by fork.
struct Sandbox {
  RunLimits limits;
  int ns_flags = 0;  // CLONE_NEW* the zygote was started with
  pid_t zygote_pid = 0;
  bool readonly_root = false;
  bool readonly_by_host = false;  // no mount namespace, but / is read-only anyway
  bool minimal_root = false;      // the zygote's root holds only the system folders
  std::string minimal_root_error;
  bool run_pidns = false;             // every runner is pid 2 of a pid namespace of its own
  bool run_netns = false;             // and has a network namespace of its own
  std::vector<std::string> readable;  // what Landlock lets a run read (PrepareLate)
  // Host folders in every run (MCP_EXEC_MOUNTS): bound into the minimal root
  // at their RUN_PATH (mounts_bound), else granted to Landlock at their
  // HOST_PATH. mounts_error: a bind that failed; the zygote must not serve.
  std::vector<mounts::Mount> mounts;
  bool mounts_bound = false;
  std::string mounts_error;
  cgroups::Delegation cgroups;  // where runs get a cgroup of their own
  std::string readonly_error;
  int landlock_abi = 0;
  bool seccomp_ok = false;
  std::string seccomp_error;
  std::vector<sock_filter> seccomp_program;
};

// Zygote, before Python starts (the process is still small, so the probe
// fork is cheap): builds the seccomp program and checks, in a throw-away
// child, that the kernel really enforces it and Landlock.
void PrepareEarly(Sandbox* sb);
// Zygote, after warm-up (which writes caches): makes every mount read-only.
void PrepareLate(Sandbox* sb);

// The layers as they stand, for the start-up log and `doctor`.
std::vector<LayerStatus> Report(const Sandbox& sb);

// Each host folder as runs find it, for the report, `doctor` and the tool
// description.
struct MountView {
  std::string path;  // where runs find it
  std::string host;
  bool writable = false, exec = false;
  std::string how;  // how it is enforced in this posture, in words
  // Without a mount namespace, a read-only folder on a writable mount: its
  // files' contents are refused to runs, their metadata (chmod, utime) is
  // guarded only by ownership.
  bool metadata_guarded = true;
};
std::vector<MountView> Mounts(const Sandbox& sb);

// How far a runner's lockdown has gone.
struct LockState {
  bool ahead_done = false;    // every layer that does not depend on the run
  bool sealed = false;        // Landlock and seccomp are on
  std::string workdir;        // "/tmp" where the run has its own tmpfs
  std::string error;          // a failed layer: the run must not start
  UniqueFd landlock_ruleset;  // prepared ahead, waiting for the run's directory
};

// A spare runner, before it knows its run: the layers that do not depend on
// the run, in kernel order: mount and ipc namespaces, private tmpfs,
// rlimits (CPU at a ceiling), credentials, no_new_privs, and, where the run
// works in its private /tmp, Landlock and seccomp too. Failures are kept in
// st->error and reported when the run arrives.
void LockdownAhead(const Sandbox& sb, LockState* st);

// Once the run is known (before its fds are put in place, which closes
// everything else, the prepared ruleset included): what is left, seccomp last, and the
// run's own CPU limit. Also does LockdownAhead first for a runner forked on
// demand. *cwd: where the run works.
bool LockdownFinish(const Sandbox& sb, LockState* st, const std::string& workdir, int64_t timeout_s,
                    std::string* cwd, std::string* error);

}  // namespace mcpexec::sandbox
