#include "ipc/proc_tree.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

namespace mcpexec {
namespace {

bool Alive(pid_t pid) {
  // A zombie is dead for our purpose.
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = fopen(path, "r");
  if (!f) return false;
  char buf[512];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char* rp = strrchr(buf, ')');
  return rp && rp[2] != 'Z' && rp[2] != 'X';
}

// A subreaper child (like a runner) that starts a grandchild in its own
// session, which starts a great-grandchild; both report their pids.
TEST(ProcTreeTest, KillTreeReachesSetsidDescendants) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  pid_t root = fork();
  if (root == 0) {
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (fork() == 0) {
      setsid();
      if (fork() == 0) {
        pid_t me = getpid();
        (void)!write(p[1], &me, sizeof me);
        pause();
        _exit(0);
      }
      _exit(0);  // orphans its child: it re-parents to the subreaper
    }
    pause();
    _exit(0);
  }
  pid_t grandchild_survivor = 0;
  ASSERT_EQ(read(p[0], &grandchild_survivor, sizeof(pid_t)), static_cast<ssize_t>(sizeof(pid_t)));
  usleep(50000);
  auto before = Descendants(root);
  EXPECT_NE(std::find(before.begin(), before.end(), grandchild_survivor), before.end());
  KillTree(root, true);
  int status;
  ASSERT_EQ(waitpid(root, &status, 0), root);
  EXPECT_TRUE(WIFSIGNALED(status));
  for (int i = 0; i < 100 && Alive(grandchild_survivor); ++i) usleep(10000);
  EXPECT_FALSE(Alive(grandchild_survivor));
}

TEST(ProcTreeTest, KillChildrenExceptKeepsTheNamedOnes) {
  pid_t keep = fork();
  if (keep == 0) {
    pause();
    _exit(0);
  }
  pid_t stray = fork();
  if (stray == 0) {
    pause();
    _exit(0);
  }
  EXPECT_GE(KillChildrenExcept(getpid(), {keep}), 1);
  int status;
  ASSERT_EQ(waitpid(stray, &status, 0), stray);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(Alive(keep));
  kill(keep, SIGKILL);
  waitpid(keep, &status, 0);
}

}  // namespace
}  // namespace mcpexec
