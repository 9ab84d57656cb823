// Issue 36, points 11 and 17, through the built binary in the postures.
//
// Point 11: in Docker's posture the runs' files and the resource
// store share one small filesystem (the container's 64 MiB /tmp). The
// store's default was 1024 MiB whatever that filesystem's size: one run's
// 55 MiB stdout filled /tmp, and every later run got ENOSPC in its working
// directory until the resource expired (15 minutes). The store is now
// bounded by its filesystem (a quarter of it by default) and leaves the
// runs their room; a stream it cannot keep says why in the result.
#include <gtest/gtest.h>

#include <string>

#include "postures.h"
#include "server_process.h"

namespace mcpexec::testing {
namespace {

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(StorePostureTest, ABigStdoutLeavesTheRunsTheirRoomInDockersPosture) {
  if (auto why = PosturesMissing("the docker posture needs root")) GTEST_SKIP() << *why;
  ServerProcess s({}, {}, Wrapper("docker"));
  s.Initialize();
  json big =
      s.Exec("import sys\nsys.stdout.write('x' * (55 << 20))\nprint('end')", {{"timeout_s", 120}});
  EXPECT_EQ(big["exit_code"], 0) << big.dump().substr(0, 2000);
  EXPECT_EQ(big["truncated"], true);
  EXPECT_FALSE(big.contains("stdout_resource")) << "55 MiB is past a quarter of 64 MiB";
  ASSERT_TRUE(big.contains("stdout_not_kept")) << big.dump().substr(0, 2000);
  EXPECT_TRUE(Has(big["stdout_not_kept"], "could not keep it whole")) << big["stdout_not_kept"];
  // The next run writes 30 MiB in its working directory: there is room.
  json next =
      s.Exec("with open('blob', 'wb') as f:\n    f.write(b'y' * (30 << 20))\nprint('wrote')",
             {{"timeout_s", 120}});
  EXPECT_EQ(next["stdout"], "wrote\n") << next.dump().substr(0, 2000);
  // A stream that fits is still kept whole.
  json mid = s.Exec("print('z' * (2 << 20))", {{"timeout_s", 120}});
  EXPECT_TRUE(mid.contains("stdout_resource")) << mid.dump().substr(0, 600);
}

// Issue 36, point 17: a run the seccomp filter killed ended with signal 31,
// reason seccomp and an empty stderr; the agent could not tell which call
// to avoid. The sandbox's SIGSYS handler names it on stderr before the run
// dies of SIGSYS, in every posture.
TEST(SeccompNameTest, AKilledRunSaysWhichSystemCallInEveryPosture) {
  if (auto why = PosturesMissing("the postures need root")) GTEST_SKIP() << *why;
  for (const char* posture : {"root", "container", "docker"}) {
    SCOPED_TRACE(posture);
    ServerProcess s({}, {}, Wrapper(posture));
    s.Initialize();
    json r = s.Exec(
        "import ctypes, signal\n"
        "try:\n"
        "    signal.signal(signal.SIGSYS, signal.SIG_IGN)\n"
        "except OSError as e:\n"
        "    print('SIGSYS handler:', e.strerror, flush=True)\n"
        "ctypes.CDLL(None).syscall(101, 0, 0, 0, 0)\n"
        "print('not reached')\n");
    EXPECT_EQ(r["reason"], "seccomp") << r.dump();
    EXPECT_EQ(r["signal"], 31) << r.dump();
    EXPECT_EQ(r["stdout"], "SIGSYS handler: Operation not permitted\n") << r.dump();
    EXPECT_TRUE(Has(r["stderr"], "the sandbox ended this run at system call ptrace (number 101)"))
        << r.dump();
    EXPECT_EQ(s.Exec("print('next')")["stdout"], "next\n");
  }
}

}  // namespace
}  // namespace mcpexec::testing
