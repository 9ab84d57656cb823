// File descriptors of a runner: the supervisor's pipes on 0/1/2, the status
// pipe on a fixed high number, the results pipe just below it, and nothing
// else.
#pragma once

#include <cstdint>
#include <vector>

namespace mcpexec::sandbox::fds {

// The status pipe lives on a high fd (1000, or just under a lower open-files
// limit) so that code juggling its low fds (dup2 onto 3, say) does not
// disturb it.
int StatusFd(int64_t max_open_files);
inline int ResultsFd(int status_fd) { return status_fd - 1; }

// fds: the run's descriptors in wire::RunFd order (the code memfd must have
// been read already). Puts them on 0/1/2, status_fd and ResultsFd(status_fd);
// closes every other.
bool ApplyInRunner(const std::vector<int>& fds, int status_fd);

}  // namespace mcpexec::sandbox::fds
