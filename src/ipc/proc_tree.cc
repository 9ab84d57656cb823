#include "ipc/proc_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "base/unique_fd.h"

namespace mcpexec {
namespace {

struct ProcInfo {
  pid_t ppid;
  char state;
};

bool ReadStat(pid_t pid, ProcInfo* info) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  UniqueFd fd(open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char buf[512];
  ssize_t n = read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return false;
  buf[n] = '\0';
  // comm may hold spaces and parentheses: parse after the last ')'.
  char* rp = strrchr(buf, ')');
  if (!rp) return false;
  char state;
  int ppid;
  if (sscanf(rp + 1, " %c %d", &state, &ppid) != 2) return false;
  info->state = state;
  info->ppid = ppid;
  return true;
}

// Parent -> children, from one pass over /proc. Zombies are left out unless
// asked for: nothing can kill them, but they count for RLIMIT_NPROC until
// their parent reaps them.
std::map<pid_t, std::vector<pid_t>> ChildrenMap(bool with_zombies = false) {
  std::map<pid_t, std::vector<pid_t>> children;
  DIR* d = opendir("/proc");
  if (!d) return children;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    pid_t pid = static_cast<pid_t>(atoi(e->d_name));
    ProcInfo info;
    if (ReadStat(pid, &info) && info.state != 'X' && (with_zombies || info.state != 'Z')) {
      children[info.ppid].push_back(pid);
    }
  }
  closedir(d);
  return children;
}

struct Edge {
  pid_t parent, child;
};

// Every (parent, child) pair below root, from the snapshot.
std::vector<Edge> Subtree(const std::map<pid_t, std::vector<pid_t>>& children, pid_t root) {
  std::vector<Edge> out;
  std::vector<pid_t> stack{root};
  while (!stack.empty()) {
    pid_t p = stack.back();
    stack.pop_back();
    auto it = children.find(p);
    if (it == children.end()) continue;
    for (pid_t c : it->second) {
      out.push_back({p, c});
      stack.push_back(c);
    }
  }
  return out;
}

// Kills pid only if, once pinned by a pidfd, it still has the expected parent.
bool KillIfChildOf(pid_t pid, pid_t expected_parent) {
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) return false;
  ProcInfo info;
  bool ok = ReadStat(pid, &info) && info.ppid == expected_parent;
  return ok && syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0) == 0;
}

void KillCollected(const std::map<pid_t, std::vector<pid_t>>& children, pid_t root, int* killed) {
  for (const Edge& e : Subtree(children, root)) {
    if (KillIfChildOf(e.child, e.parent)) ++*killed;
  }
}

}  // namespace

std::vector<pid_t> Children(pid_t parent) { return ChildrenMap()[parent]; }

std::vector<pid_t> Descendants(pid_t root) {
  std::vector<pid_t> out;
  for (const Edge& e : Subtree(ChildrenMap(), root)) out.push_back(e.child);
  return out;
}

namespace {

// utime + stime + cutime + cstime of pid (its own CPU and that of the
// children it reaped), in clock ticks, and its number of threads; false
// when it is gone.
bool UseOf(pid_t pid, TreeUse* use) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  UniqueFd fd(open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char buf[1024];
  ssize_t n = read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return false;
  buf[n] = '\0';
  char* rp = strrchr(buf, ')');
  if (!rp) return false;
  unsigned long long utime = 0, stime = 0;
  long long cutime = 0, cstime = 0, threads = 0;
  // Fields 3 to 20: state ppid pgrp session tty_nr tpgid flags minflt
  // cminflt majflt cmajflt utime stime cutime cstime priority nice
  // num_threads.
  if (sscanf(rp + 1,
             " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld %*d %*d %lld",
             &utime, &stime, &cutime, &cstime, &threads) != 5) {
    return false;
  }
  use->cpu_ticks = static_cast<int64_t>(utime + stime) + cutime + cstime;
  use->tasks = std::max<long long>(threads, 1);  // a zombie shows 0 threads; it is a process
  return true;
}

}  // namespace

std::vector<TreeUse> TreeUsage(const std::vector<pid_t>& roots) {
  // One pass over /proc for all of them. Zombies too: a process a session
  // forked and never waited for still counts against RLIMIT_NPROC.
  const auto children = ChildrenMap(true);
  std::vector<TreeUse> out;
  for (pid_t root : roots) {
    TreeUse total;
    if (UseOf(root, &total)) {
      for (const Edge& e : Subtree(children, root)) {
        TreeUse one;
        if (!UseOf(e.child, &one)) continue;  // gone meanwhile
        total.cpu_ticks += one.cpu_ticks;
        total.tasks += one.tasks;
      }
    } else {
      total = TreeUse{};
    }
    out.push_back(total);
  }
  return out;
}

void KillTree(pid_t root, bool include_root) {
  for (int round = 0; round < 1000; ++round) {
    auto children = ChildrenMap();
    int killed = 0;
    KillCollected(children, root, &killed);
    if (Subtree(children, root).empty()) break;
    if (killed == 0) usleep(1000);
  }
  if (include_root) kill(root, SIGKILL);
}

int KillChildrenExcept(pid_t parent, const std::set<pid_t>& keep) {
  int total = 0;
  for (int round = 0; round < 1000; ++round) {
    auto children = ChildrenMap();
    auto it = children.find(parent);
    int found = 0, killed = 0;
    if (it != children.end()) {
      for (pid_t c : it->second) {
        if (keep.count(c)) continue;
        ++found;
        KillCollected(children, c, &killed);
        if (KillIfChildOf(c, parent)) ++killed;
      }
    }
    total += killed;
    if (found == 0) break;
    if (killed == 0) usleep(1000);
  }
  return total;
}

}  // namespace mcpexec
