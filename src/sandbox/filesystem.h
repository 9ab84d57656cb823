// The filesystem layer. In its mount namespace the zygote pivots into a
// minimal root (the system folders read-only, a private /dev of five
// devices, machine-id masked: PrepareMinimalRoot) after warm-up, which
// writes caches. Each run then mounts, in a mount namespace of its own, a
// fresh size-capped tmpfs on /tmp (its working directory) and one on
// /dev/shm, and a /proc of its own pid namespace with host files masked
// (MountRunProc): what it writes dies with it, and it has no parent or
// sibling directory to write into. Without mount namespaces, the run works
// in the directory the supervisor made, and Landlock and the uid keep its
// writes there.
#pragma once

#include <string>
#include <vector>

#include "model/mounts.h"
#include "sandbox/layers.h"

namespace mcpexec::sandbox::filesystem {

// The devices a run's /dev holds, and the system folders its root holds.
extern const char* const kDevices[5];
extern const char* const kSystemDirs[8];

// Zygote, after PrepareReadOnly: makes its root a minimal view, which every
// run inherits: the system's /usr, /bin, /sbin, /lib*, /etc (without
// /etc/machine-id), /proc, a private /dev (null, zero, full, random,
// urandom; no ptys) and an empty /tmp, all read-only. Nothing else of the
// host (home folders, /opt, /var, /srv, the server's files) is there, but
// the operator's host folders (MCP_EXEC_MOUNTS), each bound at its RUN_PATH
// (not recursively: submounts stay out), nodev, nosuid, noexec unless
// exec, read-only unless rw. A bind that fails sets *mount_error (and
// error) instead: the operator's setting, not the host's namespaces.
bool PrepareMinimalRoot(const std::vector<mounts::Mount>& mounts, std::string* error,
                        std::string* mount_error);

// Why a folder MCP_EXEC_MOUNTS wants rw cannot be: the host mounted it
// read-only.
std::string ReadOnlyForRw(const std::string& host);

// Runner, first process of its own pid and mount namespaces: a /proc of its
// own (only its processes), with what tells about the host masked.
bool MountRunProc(std::string* error);

// Zygote, after warm-up. Returns the number of mounts it could not make
// read-only (and the first error); "/" failing makes the layer inactive.
bool PrepareReadOnly(std::string* error);

struct RunMounts {
  bool private_tmp = false;  // /tmp and /dev/shm are the run's own
  std::string workdir;       // where the run works (its cwd)
};

// Runner, inside its own mount namespace: mounts the private /tmp (its
// working directory) and /dev/shm. Without mount namespaces it does nothing:
// the run then works in the directory the supervisor made.
bool ApplyInRunner(bool mount_ns, const RunLimits& limits, RunMounts* mounts, std::string* error);

}  // namespace mcpexec::sandbox::filesystem
