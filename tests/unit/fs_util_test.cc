#include "base/fs_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

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

TEST(FsUtilTest, MissingTreeIsAlreadyRemoved) {
  EXPECT_TRUE(RemoveTree("/tmp/fsutil-does-not-exist-x"));
}

}  // namespace
}  // namespace mcpexec
