// Credentials: started as root, a run becomes the sandbox uid/gid with no
// supplementary groups; in every posture it ends with no capability at all
// (bounding and ambient sets included) and no_new_privs.
#pragma once

#include <sys/types.h>

#include <string>

#include "sandbox/layers.h"

namespace mcpexec::sandbox::credentials {

bool ApplyInRunner(const RunLimits& limits, pid_t zygote_pid, std::string* error);
bool ApplyNoNewPrivs(std::string* error);
// For a process that never runs the caller's code but lives beside it (a
// run's init): every capability, bounding and ambient sets included, as far
// as it may drop them, and no_new_privs. Its uid stays.
void DropEverything();

}  // namespace mcpexec::sandbox::credentials
