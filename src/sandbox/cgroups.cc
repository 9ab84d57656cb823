#include "sandbox/cgroups.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "base/resources.h"
#include "base/unique_fd.h"

namespace mcpexec::sandbox::cgroups {
namespace {

std::string ReadAt(int dirfd, const std::string& rel) {
  UniqueFd fd(openat(dirfd, rel.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return "";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

std::string ReadFile(const std::string& path) { return ReadAt(AT_FDCWD, path); }

// 0 on success, else errno.
int WriteAt(int dirfd, const std::string& rel, const std::string& value) {
  UniqueFd fd(openat(dirfd, rel.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  ssize_t n = write(fd.get(), value.data(), value.size());
  return n == static_cast<ssize_t>(value.size()) ? 0 : (n < 0 ? errno : EIO);
}

bool HasWord(const std::string& text, const std::string& word) {
  std::stringstream in(text);
  std::string item;
  while (in >> item) {
    if (item == word) return true;
  }
  return false;
}

// Inside a cgroup namespace of its own, "/" is the container's cgroup, not
// the host's root.
bool InInitialCgroupNamespace() {
  char buf[64] = {};
  ssize_t n = readlink("/proc/self/ns/cgroup", buf, sizeof buf - 1);
  return n <= 0 || std::string(buf) == "cgroup:[4026531835]";
}

// Removes what earlier servers left below dir: mcp-exec-<pid> parents whose
// pid is gone, and their run children (only empty cgroups can be removed).
void RemoveStale(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind("mcp-exec-", 0) != 0) continue;
    pid_t pid = static_cast<pid_t>(atoi(n.c_str() + 9));
    if (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH)) continue;
    stale.push_back(dir + "/" + n);
  }
  closedir(d);
  for (const std::string& parent : stale) {
    if (DIR* p = opendir(parent.c_str())) {
      while (dirent* e = readdir(p)) {
        if (e->d_type == DT_DIR && e->d_name[0] != '.') rmdir((parent + "/" + e->d_name).c_str());
      }
      closedir(p);
    }
    rmdir(parent.c_str());
  }
}

// Makes <dir>/mcp-exec-<pid> and opens it; -1 with *why on failure.
int MakeParent(const std::string& dir, std::string* parent, std::string* why) {
  RemoveStale(dir);
  *parent = dir + "/mcp-exec-" + std::to_string(getpid());
  if (mkdir(parent->c_str(), 0755) != 0 && errno != EEXIST) {
    *why = "cannot make " + *parent + ": " + strerror(errno);
    return -1;
  }
  int fd = open(parent->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) *why = "cannot open " + *parent + ": " + strerror(errno);
  return fd;
}

std::string ControllerDir(const CgroupMount& m, const std::string& own, const std::string& name,
                          std::string* why) {
  if (m.point.empty()) {
    *why = "no " + name + " controller is mounted";
    return "";
  }
  if (own.empty()) {
    *why = "this process has no " + name + " cgroup";
    return "";
  }
  if (own == "/" && InInitialCgroupNamespace()) {
    *why = "the server runs in the host's root " + name +
           " cgroup, which is not its to divide: start it in a cgroup of its own";
    return "";
  }
  return CgroupDir(m, own);
}

void DetectV2(const CgroupMount& unified, Delegation* d) {
  std::string why;
  std::string dir = ControllerDir(unified, OwnCgroupPath(""), "cgroup v2", &why);
  if (dir.empty()) {
    d->why_not_memory = d->why_not_pids = why;
    return;
  }
  std::string available = ReadFile(dir + "/cgroup.controllers");
  if (!HasWord(available, "memory")) {
    d->why_not_memory = d->why_not_pids =
        "the memory controller is not delegated to " + dir + " (cgroup.controllers: " +
        (available.empty() ? "empty" : available.substr(0, available.find('\n'))) + ")";
    return;
  }
  std::string parent;
  UniqueFd fd(MakeParent(dir, &parent, &why));
  if (!fd) {
    d->why_not_memory = d->why_not_pids = why;
    return;
  }
  // Our parent holds no process: its children may get the controllers.
  bool pids = HasWord(available, "pids");
  std::string enable = pids ? "+memory +pids" : "+memory";
  int err = WriteAt(fd.get(), "cgroup.subtree_control", enable);
  if (err != 0) {
    d->why_not_memory = d->why_not_pids =
        "cannot enable " + enable + " below " + parent + ": " + strerror(err) +
        " (the server's own cgroup must enable them in its cgroup.subtree_control)";
    rmdir(parent.c_str());
    return;
  }
  // The delegation holds its fds for the server's life (RemoveParents
  // closes them); in v2 memory and pids share the one directory.
  d->version = 2;
  d->memory_fd = fd.Release();
  d->memory_dir = parent;
  if (pids) {
    d->pids_fd = d->memory_fd;
    d->pids_dir = parent;
  } else {
    d->why_not_pids = "the pids controller is not delegated to " + dir;
  }
}

}  // namespace

Delegation Detect() {
  Delegation d;
  const CgroupMount memory_v1 = FindCgroupMount("memory");
  const CgroupMount pids_v1 = FindCgroupMount("pids");
  const CgroupMount unified = FindCgroupMount("");
  if (memory_v1.point.empty()) {
    DetectV2(unified, &d);
    return d;
  }
  std::string why, parent;
  std::string dir = ControllerDir(memory_v1, OwnCgroupPath("memory"), "memory", &why);
  int fd = dir.empty() ? -1 : MakeParent(dir, &parent, &why);
  if (fd < 0) {
    d.why_not_memory = why;
  } else {
    d.version = 1;
    d.memory_fd = fd;
    d.memory_dir = parent;
  }
  why.clear();
  dir = ControllerDir(pids_v1, OwnCgroupPath("pids"), "pids", &why);
  fd = dir.empty() ? -1 : MakeParent(dir, &parent, &why);
  if (fd < 0) {
    d.why_not_pids = why;
  } else {
    if (d.version == 0) d.version = 1;
    d.pids_fd = fd;
    d.pids_dir = parent;
  }
  return d;
}

void RemoveParents(const Delegation& d) {
  for (const std::string& dir : {d.memory_dir, d.pids_dir}) {
    if (dir.empty()) continue;
    if (DIR* p = opendir(dir.c_str())) {
      while (dirent* e = readdir(p)) {
        if (e->d_type == DT_DIR && e->d_name[0] != '.') rmdir((dir + "/" + e->d_name).c_str());
      }
      closedir(p);
    }
    rmdir(dir.c_str());
  }
  if (d.memory_fd >= 0) close(d.memory_fd);
  if (d.pids_fd >= 0 && d.pids_fd != d.memory_fd) close(d.pids_fd);
}

bool Create(const Delegation& d, const RunLimits& l, const std::string& name, std::string* error) {
  auto fail = [&](const std::string& what, int err) {
    *error = "cgroup " + name + ": " + what + ": " + strerror(err);
    return false;
  };
  if (d.memory_fd >= 0) {
    if (mkdirat(d.memory_fd, name.c_str(), 0755) != 0 && errno != EEXIST)
      return fail("mkdir", errno);
    std::string bytes = std::to_string(l.memory_bytes);
    if (d.version == 1) {
      if (int e = WriteAt(d.memory_fd, name + "/memory.limit_in_bytes", bytes)) {
        return fail("memory.limit_in_bytes", e);
      }
      // No swap beyond the limit, where swap is accounted.
      int e = WriteAt(d.memory_fd, name + "/memory.memsw.limit_in_bytes", bytes);
      if (e != 0 && e != ENOENT) return fail("memory.memsw.limit_in_bytes", e);
    } else {
      if (int e = WriteAt(d.memory_fd, name + "/memory.max", bytes)) return fail("memory.max", e);
      int e = WriteAt(d.memory_fd, name + "/memory.swap.max", "0");
      if (e != 0 && e != ENOENT) return fail("memory.swap.max", e);
      // Out of memory, the whole run goes, not one process of it.
      WriteAt(d.memory_fd, name + "/memory.oom.group", "1");
    }
  }
  if (d.pids_fd >= 0) {
    if (d.pids_fd != d.memory_fd && mkdirat(d.pids_fd, name.c_str(), 0755) != 0 &&
        errno != EEXIST) {
      return fail("mkdir (pids)", errno);
    }
    if (int e = WriteAt(d.pids_fd, name + "/pids.max", std::to_string(l.max_processes))) {
      return fail("pids.max", e);
    }
  }
  return true;
}

bool Join(const Delegation& d, const std::string& name, std::string* error) {
  std::vector<int> fds;
  if (d.memory_fd >= 0) fds.push_back(d.memory_fd);
  if (d.pids_fd >= 0 && d.pids_fd != d.memory_fd) fds.push_back(d.pids_fd);
  for (int fd : fds) {
    // "0": the writer itself, whatever pid namespace it sees.
    if (int e = WriteAt(fd, name + "/cgroup.procs", "0")) {
      *error = "join cgroup " + name + ": " + strerror(e);
      return false;
    }
  }
  return true;
}

int64_t OomKills(const Delegation& d, const std::string& name) {
  if (d.memory_fd < 0 || name.empty()) return 0;
  std::string text =
      ReadAt(d.memory_fd, name + (d.version == 1 ? "/memory.oom_control" : "/memory.events"));
  std::stringstream in(text);
  std::string key;
  long long value = 0;
  int64_t kills = 0;
  while (in >> key >> value) {
    if (key == "oom_kill" || key == "oom_group_kill") kills += value;
  }
  return kills;
}

bool OomKilled(const Delegation& d, const std::string& name) { return OomKills(d, name) > 0; }

int64_t PidsCurrent(const Delegation& d, const std::string& name) {
  if (d.pids_fd < 0 || name.empty()) return -1;
  const std::string text = ReadAt(d.pids_fd, name + "/pids.current");
  if (text.empty() || text[0] < '0' || text[0] > '9') return -1;
  return std::strtoll(text.c_str(), nullptr, 10);
}

void Destroy(const Delegation& d, const std::string& name) {
  for (int fd : {d.memory_fd, d.pids_fd}) {
    if (fd < 0) continue;
    // Whatever is still in it (nothing, when the run had its own pid
    // namespace: its init's end took everything with it).
    std::stringstream procs(ReadAt(fd, name + "/cgroup.procs"));
    pid_t pid;
    while (procs >> pid) kill(pid, SIGKILL);
    for (int i = 0; i < 50; ++i) {
      if (unlinkat(fd, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) break;
      if (errno != EBUSY) break;
      usleep(1000);  // its last task is still exiting
    }
    if (d.pids_fd == d.memory_fd) break;
  }
}

void Probe(Delegation* d, const RunLimits& limits) {
  if (d->version == 0) return;
  std::string name = "probe-" + std::to_string(getpid()), error;
  auto off = [&](const std::string& why) {
    d->version = 0;
    d->why_not_memory = d->why_not_pids = why;
  };
  if (!Create(*d, limits, name, &error)) return off(error);
  pid_t pid = fork();
  if (pid == 0) _exit(Join(*d, name, &error) ? 0 : 1);
  int status = 0;
  bool joined =
      pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  Destroy(*d, name);
  if (!joined) off("a process could not join a child cgroup of " + d->memory_dir);
}

LayerStatus Report(const Delegation& d, const RunLimits& l) {
  LayerStatus s;
  s.name = "cgroup";
  s.active = d.version > 0 && (d.memory_fd >= 0 || d.pids_fd >= 0);
  if (!s.active) {
    s.detail = "no delegated cgroup: memory and processes are bounded per process by rlimits (" +
               d.why_not_memory + ")";
    s.fix =
        "start the server in a cgroup of its own that it may write (cgroup v2: with memory and "
        "pids in its parent's cgroup.subtree_control; Kubernetes and Docker: see README)";
    return s;
  }
  std::string v = "v" + std::to_string(d.version);
  s.detail = d.memory_fd >= 0
                 ? v + ": each run in a memory cgroup of its own below " + d.memory_dir +
                       ": all its processes, tmpfs and shared memory together under " +
                       std::to_string(l.memory_bytes >> 20) + " MiB"
                 : "memory: not used (" + d.why_not_memory + ")";
  s.detail += d.pids_fd >= 0 ? "; at most " + std::to_string(l.max_processes) +
                                   " processes per run (pids cgroup)"
                             : "; pids: not used (" + d.why_not_pids + ")";
  return s;
}

}  // namespace mcpexec::sandbox::cgroups
