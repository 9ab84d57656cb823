#include "sandbox/fds.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wire.h"

namespace mcpexec::sandbox::fds {

bool ApplyInRunner(const std::vector<int>& fds) {
  if (fds.size() != wire::kRunFdCount) return false;
  int moved[wire::kRunFdCount];
  for (int i = 0; i < wire::kRunFdCount; ++i) {
    moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, kStatusFd + 100);
    if (moved[i] < 0) return false;
  }
  if (dup2(moved[wire::kStdin], 0) < 0 || dup2(moved[wire::kStdout], 1) < 0 ||
      dup2(moved[wire::kStderr], 2) < 0 || dup3(moved[wire::kStatus], kStatusFd, O_CLOEXEC) < 0) {
    return false;
  }
  syscall(SYS_close_range, 3, kStatusFd - 1, 0);
  syscall(SYS_close_range, kStatusFd + 1, ~0U, 0);
  return true;
}

}  // namespace mcpexec::sandbox::fds
