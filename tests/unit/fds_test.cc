#include "sandbox/fds.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ipc/control.h"
#include "sandbox_test_util.h"

namespace mcpexec::testing {
namespace {

// A profile that refuses close_range (older kernels, some container
// runtimes): the runner must still close every other descriptor.
bool RefuseCloseRange(int errno_value) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return false;
  bool ok = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(errno_value), SCMP_SYS(close_range), 0) == 0 &&
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && seccomp_load(ctx) == 0;
  seccomp_release(ctx);
  return ok;
}

// In a child: the run's five fds, plus strays that must not survive.
int ApplyAndCountStrays(int errno_value) {
  if (errno_value && !RefuseCloseRange(errno_value)) return 250;
  int strays[3];
  for (int& s : strays) s = open("/dev/null", O_RDONLY);  // not close-on-exec: inherited
  int high = fcntl(strays[0], F_DUPFD, 700);
  std::vector<int> fds;
  for (int i = 0; i < ipc::kRunFdCount; ++i) fds.push_back(open("/dev/null", O_RDWR));
  int status_fd = sandbox::fds::StatusFd(1024);
  if (!sandbox::fds::ApplyInRunner(fds, status_fd)) return 251;
  int left = 0;
  for (int fd : {strays[0], strays[1], strays[2], high}) {
    if (fd > 2 && fd != status_fd && fd != sandbox::fds::ResultsFd(status_fd) &&
        fcntl(fd, F_GETFD) >= 0) {
      ++left;
    }
  }
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) return 252;
  }
  if (fcntl(status_fd, F_GETFD) < 0) return 253;
  if (fcntl(sandbox::fds::ResultsFd(status_fd), F_GETFD) < 0) return 254;
  return left;
}

TEST(FdsTest, EverythingElseIsClosed) {
  Outcome o = InChild([] { return true; }, [] { return ApplyAndCountStrays(0); });
  EXPECT_EQ(o.error, 0) << o.ToString();
}

TEST(FdsTest, EverythingElseIsClosedWhenCloseRangeIsRefused) {
  for (int e : {ENOSYS, EPERM}) {
    Outcome o = InChild([] { return true; }, [e] { return ApplyAndCountStrays(e); });
    EXPECT_EQ(o.error, 0) << "close_range refused with " << strerror(e) << ": " << o.ToString()
                          << " (a number below 250: descriptors left open)";
  }
}

}  // namespace
}  // namespace mcpexec::testing
