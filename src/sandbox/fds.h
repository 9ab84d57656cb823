// File descriptors of a runner: the supervisor's pipes on 0/1/2, the status
// pipe on a fixed high number, the results pipe just below it, the tool
// channel below a session's cell socket, and nothing else.
#pragma once

#include <cstdint>
#include <vector>

namespace mcpexec::sandbox::fds {

// The status pipe lives on a high fd (1000, or just under a lower open-files
// limit) so that code juggling its low fds (dup2 onto 3, say) does not
// disturb it.
int StatusFd(int64_t max_open_files);
inline int ResultsFd(int status_fd) { return status_fd - 1; }
// A session's interpreter also keeps the socket its cells arrive on.
inline int SessionFd(int status_fd) { return status_fd - 2; }
// The run's end of its tool channel (code mode).
inline int ToolsFd(int status_fd) { return status_fd - 3; }

// fds: the run's descriptors in ipc::RunFd order (the code memfd must have
// been read already). Puts them on 0/1/2, status_fd and ResultsFd(status_fd)
// (and session_sock, when >= 0, on SessionFd(status_fd)); closes every other.
bool ApplyInRunner(const std::vector<int>& fds, int status_fd, int session_sock = -1);

// A session's next cell, after lockdown: its fresh descriptors (ipc::RunFd
// order, the code memfd read already) replace the last cell's on 0/1/2, the
// status and the results fd; the received copies are closed.
bool ApplyCell(const std::vector<int>& fds, int status_fd);
// Between cells: 0/1/2 on /dev/null (what the session's threads print
// between cells goes nowhere, never into the next cell's pipes), and the
// last cell's status and results pipes closed, so the supervisor's ends see
// EOF from this process.
void DetachCell(int status_fd);

}  // namespace mcpexec::sandbox::fds
