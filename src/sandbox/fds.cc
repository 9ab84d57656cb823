#include "sandbox/fds.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "wire.h"

namespace mcpexec::sandbox::fds {

int StatusFd(int64_t max_open_files) {
  return static_cast<int>(std::min<int64_t>(1000, max_open_files - 1));
}

bool ApplyInRunner(const std::vector<int>& fds, int status_fd) {
  if (fds.size() != wire::kRunFdCount) return false;
  // Copies above 2 first, so that moving one onto 0/1/2 cannot clobber
  // another; the open-files limit may already be in force, so stay low.
  int moved[wire::kRunFdCount];
  for (int i = 0; i < wire::kRunFdCount; ++i) {
    moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    if (moved[i] < 0 || moved[i] == status_fd) return false;
  }
  if (dup2(moved[wire::kStdin], 0) < 0 || dup2(moved[wire::kStdout], 1) < 0 ||
      dup2(moved[wire::kStderr], 2) < 0 || dup3(moved[wire::kStatus], status_fd, O_CLOEXEC) < 0) {
    return false;
  }
  syscall(SYS_close_range, 3, status_fd - 1, 0);
  syscall(SYS_close_range, status_fd + 1, ~0U, 0);
  return true;
}

}  // namespace mcpexec::sandbox::fds
