// The filesystem layer. In the zygote's mount namespace every mount is made
// read-only once (after warm-up, which writes caches); each run then mounts
// size-capped tmpfs on its working directory, /tmp and /dev/shm in its own
// mount namespace, so what it writes dies with it. Without mount namespaces,
// Landlock and the uid are what keep writes in the working directory.
#pragma once

#include <string>
#include <vector>

#include "sandbox/layers.h"

namespace mcpexec::sandbox::filesystem {

// Zygote, after warm-up. Returns the number of mounts it could not make
// read-only (and the first error); "/" failing makes the layer inactive.
bool PrepareReadOnly(std::string* error);

struct RunMounts {
  bool private_tmp = false;  // /tmp and /dev/shm are the run's own
};

// Runner, inside its own mount namespace (or not, when mount_ns is false).
bool ApplyInRunner(bool mount_ns, const std::string& workdir, const RunLimits& limits,
                   RunMounts* mounts, std::string* error);

}  // namespace mcpexec::sandbox::filesystem
