#include "sandbox/landlock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>

#include "base/fs_util.h"
#include "sandbox/credentials.h"
#include "sandbox_test_util.h"

namespace mcpexec::testing {
namespace {

using sandbox::landlock::Apply;
using sandbox::landlock::ProbeAbi;

class LandlockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    abi_ = ProbeAbi();
    if (abi_ < 1)
      GTEST_SKIP() << "Landlock is not available on this kernel (needs 5.13 and lsm=landlock)";
    dir_ = MakePrivateDir("/tmp", "landlock-test-");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    if (!dir_.empty()) RemoveTree(dir_);
  }
  Outcome Run(const std::function<int()>& call) {
    return InChild(
        [&] {
          std::string error;
          return sandbox::credentials::ApplyNoNewPrivs(&error) &&
                 Apply(abi_, {{dir_}, {"/dev/null"}, {"/"}, {}, {}}, &error);
        },
        call);
  }
  int abi_ = 0;
  std::string dir_;
};

int OpenForWrite(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

TEST_F(LandlockTest, WritesOnlyInTheAllowedDirectory) {
  EXPECT_EQ(Run([&] { return OpenForWrite(dir_ + "/ok"); }).error, 0);
  EXPECT_EQ(Run([] { return OpenForWrite("/tmp/landlock-test-outside"); }).error, EACCES);
  EXPECT_EQ(Run([] { return OpenForWrite("/dev/null"); }).error, 0);
  EXPECT_EQ(Run([] { return Errno(open("/etc/hostname", O_RDONLY)); }).error, 0)
      << "reads stay allowed";
}

TEST_F(LandlockTest, SignalsAreScopedToTheDomain) {
  if (abi_ < 6)
    GTEST_SKIP() << "signal scoping needs Landlock ABI 6 (Linux 6.12); this kernel has " << abi_;
  pid_t outside = fork();
  if (outside == 0) {
    pause();
    _exit(0);
  }
  Outcome o = Run([&] { return Errno(kill(outside, SIGTERM)); });
  EXPECT_EQ(o.error, EPERM) << o.ToString();
  kill(outside, SIGKILL);
  waitpid(outside, nullptr, 0);
}

}  // namespace
}  // namespace mcpexec::testing
