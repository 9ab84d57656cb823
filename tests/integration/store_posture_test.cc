// Issue 36, point 11: in Docker's posture the runs' files and the resource
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

}  // namespace
}  // namespace mcpexec::testing
