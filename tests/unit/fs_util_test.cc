#include "base/fs_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <vector>

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

// Folders of servers that were killed are swept; a held one, one without a
// lock, a young one, a symlink and names of another shape never are.
TEST(FsUtilTest, SweepRemovesOnlyOldUnheldFoldersOfTheRightShape) {
  std::string root = MakePrivateDir("/tmp", "fsutil-sweep-test-");
  ASSERT_FALSE(root.empty());
  auto dir = [&](const std::string& name, bool lock, bool old) {
    const std::string d = root + "/" + name;
    EXPECT_EQ(mkdir(d.c_str(), 0700), 0) << d;
    std::ofstream(d + "/file") << "x";
    if (lock) std::ofstream(d + "/.lock");
    if (old) {
      const timespec past[2] = {{time(nullptr) - 60, 0}, {time(nullptr) - 60, 0}};
      EXPECT_EQ(utimensat(AT_FDCWD, d.c_str(), past, AT_SYMLINK_NOFOLLOW), 0);
    }
    return d;
  };
  const std::string dead = dir("mcp-exec-AbC123", true, true);
  const std::string dead_store = dir("mcp-exec-resources-x1Y2z3", true, true);
  const std::string held = dir("mcp-exec-HELD00", true, true);
  UniqueFd hold;
  ASSERT_TRUE(HoldDir(held, &hold));
  const timespec past[2] = {{time(nullptr) - 60, 0}, {time(nullptr) - 60, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, held.c_str(), past, AT_SYMLINK_NOFOLLOW), 0);
  const std::string unlocked = dir("mcp-exec-NoLock", false, true);
  const std::string young = dir("mcp-exec-Young1", true, false);
  const std::string cache = dir("mcp-exec-cache-0", true, true);
  const std::string longer = dir("mcp-exec-test-AbC123", true, true);
  ASSERT_EQ(symlink(dead_store.c_str(), (root + "/mcp-exec-Link00").c_str()), 0);

  std::vector<std::string> removed =
      SweepUnheldDirs(root, {"mcp-exec-", "mcp-exec-resources-"}, std::chrono::seconds(10));
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{dead, dead_store}));
  EXPECT_FALSE(Exists(dead));
  EXPECT_FALSE(Exists(dead_store));
  for (const std::string& kept : {held, unlocked, young, cache, longer}) {
    EXPECT_TRUE(Exists(kept + "/file")) << kept;
  }
  EXPECT_TRUE(Exists(root + "/mcp-exec-Link00"));
  hold.Reset();  // the holder is gone: now it goes too
  EXPECT_EQ(SweepUnheldDirs(root, {"mcp-exec-"}, std::chrono::seconds(0)).size(), 2u)
      << "the held folder and the young one";
  EXPECT_TRUE(RemoveTree(root));
}

TEST(FsUtilTest, MissingTreeIsAlreadyRemoved) {
  EXPECT_TRUE(RemoveTree("/tmp/fsutil-does-not-exist-x"));
}

}  // namespace
}  // namespace mcpexec
