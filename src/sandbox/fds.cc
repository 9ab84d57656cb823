#include "sandbox/fds.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>

#include "ipc/control.h"

namespace mcpexec::sandbox::fds {

namespace {

// close_range, or where a profile refuses it (ENOSYS, EPERM) one close()
// per fd up to the limit. *fell_back: the second way was taken.
bool CloseRange(unsigned first, unsigned last, bool* fell_back) {
  if (first > last) return true;
  if (syscall(SYS_close_range, first, last, 0) == 0) return true;
  *fell_back = true;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return false;
  // Descriptors at or above the soft limit may exist (inherited before it
  // was lowered): go up to the hard limit, bounded.
  rlim_t top = std::min<rlim_t>(std::max(rl.rlim_cur, rl.rlim_max), 1 << 20);
  for (rlim_t fd = first; fd <= last && fd < top; ++fd) close(static_cast<int>(fd));
  return true;
}

// True when the only open fds are 0, 1, 2, status_fd, the results fd, the
// tool channel and (for a session) its socket.
bool OnlyExpectedOpen(int status_fd, bool session) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return false;
  int self = dirfd(d);
  bool ok = true;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = atoi(e->d_name);
    if (fd > 2 && fd != status_fd && fd != ResultsFd(status_fd) && fd != ToolsFd(status_fd) &&
        fd != self && !(session && fd == SessionFd(status_fd))) {
      ok = false;
    }
  }
  closedir(d);
  return ok;
}

}  // namespace

int StatusFd(int64_t max_open_files) {
  return static_cast<int>(std::min<int64_t>(1000, max_open_files - 1));
}

namespace {

// Copies above 2 first, so that moving one onto 0/1/2 cannot clobber
// another; the open-files limit may already be in force, so stay low. Then
// the copies go onto 0/1/2, the status and the results fd.
bool PlaceRunFds(const std::vector<int>& fds, int status_fd, int* moved) {
  if (fds.size() != ipc::kRunFdCount) return false;
  const int results_fd = ResultsFd(status_fd);
  for (int i = 0; i < ipc::kRunFdCount; ++i) {
    moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    if (moved[i] < 0 || moved[i] >= ToolsFd(status_fd)) return false;
  }
  return dup2(moved[ipc::kStdin], 0) >= 0 && dup2(moved[ipc::kStdout], 1) >= 0 &&
         dup2(moved[ipc::kStderr], 2) >= 0 &&
         dup3(moved[ipc::kStatus], status_fd, O_CLOEXEC) >= 0 &&
         dup3(moved[ipc::kResults], results_fd, O_CLOEXEC) >= 0 &&
         dup3(moved[ipc::kTools], ToolsFd(status_fd), O_CLOEXEC) >= 0;
}

}  // namespace

bool ApplyInRunner(const std::vector<int>& fds, int status_fd, int session_sock) {
  int moved[ipc::kRunFdCount];
  if (!PlaceRunFds(fds, status_fd, moved)) return false;
  const bool session = session_sock >= 0;
  if (session && dup3(session_sock, SessionFd(status_fd), O_CLOEXEC) < 0) return false;
  // Everything else goes. close_range's success is the kernel's word; after
  // the fallback, a check that none is left, so that a layer reporting
  // success really holds.
  bool fell_back = false;
  if (!CloseRange(3, ToolsFd(status_fd) - 1, &fell_back) ||
      (!session && !CloseRange(SessionFd(status_fd), SessionFd(status_fd), &fell_back)) ||
      !CloseRange(status_fd + 1, ~0U, &fell_back)) {
    return false;
  }
  return !fell_back || OnlyExpectedOpen(status_fd, session);
}

bool ApplyCell(const std::vector<int>& fds, int status_fd) {
  int moved[ipc::kRunFdCount];
  std::fill(std::begin(moved), std::end(moved), -1);
  bool ok = PlaceRunFds(fds, status_fd, moved);
  // The cell's code may hold low fds of its own (state kept across cells):
  // only the copies made here and the received ones are closed.
  for (int i = 0; i < ipc::kRunFdCount && i < static_cast<int>(fds.size()); ++i) {
    if (moved[i] >= 0) close(moved[i]);
    close(fds[i]);
  }
  return ok;
}

void DetachCell(int status_fd) {
  // Without /dev/null, fds 0/1/2 keep the last cell's pipes, whose reading
  // ends the supervisor closes (writes then fail with EPIPE).
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    for (int fd = 0; fd <= 2; ++fd) dup2(null_fd, fd);
    close(null_fd);
  }
  close(ResultsFd(status_fd));
  close(ToolsFd(status_fd));  // a thread calling a tool between cells gets an error
  close(status_fd);
}

}  // namespace mcpexec::sandbox::fds
