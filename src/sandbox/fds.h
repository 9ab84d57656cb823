// File descriptors of a runner: the supervisor's pipes on 0/1/2, the status
// pipe on a fixed high number, and nothing else.
#pragma once

#include <vector>

namespace mcpexec::sandbox::fds {

// The status pipe lives on a high, fixed fd so that code juggling its low
// fds (dup2 onto 3, say) does not disturb it.
constexpr int kStatusFd = 1000;

// fds: the run's descriptors in wire::RunFd order (the code memfd must have
// been read already). Closes every other descriptor.
bool ApplyInRunner(const std::vector<int>& fds);

}  // namespace mcpexec::sandbox::fds
