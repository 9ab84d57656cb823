#include "base/fs_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "base/unique_fd.h"

namespace mcpexec {
namespace {

bool Exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

TEST(FsUtilTest, RemovesNestedTreeWithHostilePermissions) {
  std::string root = MakePrivateDir("/tmp", "fsutil-test-");
  ASSERT_FALSE(root.empty());
  ASSERT_EQ(mkdir((root + "/a").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((root + "/a/b").c_str(), 0700), 0);
  std::ofstream(root + "/a/b/f") << "x";
  ASSERT_EQ(chmod((root + "/a/b").c_str(), 0), 0);
  ASSERT_EQ(chmod((root + "/a").c_str(), 0), 0);
  EXPECT_TRUE(RemoveTree(root));
  EXPECT_FALSE(Exists(root));
}

TEST(FsUtilTest, DoesNotFollowSymlinksOutOfTheTree) {
  std::string outside = MakePrivateDir("/tmp", "fsutil-outside-");
  std::ofstream(outside + "/keep") << "precious";
  std::string root = MakePrivateDir("/tmp", "fsutil-test-");
  ASSERT_EQ(symlink(outside.c_str(), (root + "/link").c_str()), 0);
  ASSERT_EQ(symlink((outside + "/keep").c_str(), (root + "/filelink").c_str()), 0);
  EXPECT_TRUE(RemoveTree(root));
  EXPECT_FALSE(Exists(root));
  EXPECT_TRUE(Exists(outside + "/keep"));
  RemoveTree(outside);
}

// Issue 19, point 15: a run nested directories deeper than the old
// recursion's bound (4096), and the tree outlived the run and the server.
TEST(FsUtilTest, RemovesATreeDeeperThanAnyRecursionBound) {
  std::string root = MakePrivateDir("/tmp", "fsutil-deep-");
  UniqueFd dir(open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(mkdirat(dir.get(), "d", 0700), 0) << "depth " << i;
    if (i % 100 == 0) {
      UniqueFd file(openat(dir.get(), "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    }
    if (i % 1000 == 999) fchmod(dir.get(), 0);  // no permissions, as code may leave them
    UniqueFd next(openat(dir.get(), "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(next) << "depth " << i;
    dir = std::move(next);
  }
  dir.Reset();
  EXPECT_TRUE(RemoveTree(root));
  EXPECT_FALSE(Exists(root));
}

TEST(FsUtilTest, MissingTreeIsAlreadyRemoved) {
  EXPECT_TRUE(RemoveTree("/tmp/fsutil-does-not-exist-x"));
}

}  // namespace
}  // namespace mcpexec
