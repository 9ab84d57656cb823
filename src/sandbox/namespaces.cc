#include "sandbox/namespaces.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/unique_fd.h"

namespace mcpexec::sandbox::namespaces {
namespace {

constexpr int kBase = CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;

struct Name {
  int flag;
  const char* name;
};
constexpr Name kNames[] = {{CLONE_NEWUSER, "user"}, {CLONE_NEWPID, "pid"}, {CLONE_NEWNET, "net"},
                           {CLONE_NEWNS, "mount"},  {CLONE_NEWIPC, "ipc"}, {CLONE_NEWUTS, "uts"}};

bool WriteFile(const char* path, const char* text, std::string* error) {
  UniqueFd fd(open(path, O_WRONLY | O_CLOEXEC));
  ssize_t len = static_cast<ssize_t>(strlen(text));
  bool ok = fd && write(fd.get(), text, len) == len;
  if (!ok) *error = std::string("write(") + path + ", \"" + text + "\"): " + strerror(errno);
  return ok;
}

}  // namespace

std::vector<int> FlagSets() {
  if (geteuid() == 0) return {kBase, kBase & ~CLONE_NEWPID, 0};
  return {CLONE_NEWUSER | kBase, CLONE_NEWUSER | (kBase & ~CLONE_NEWPID), 0};
}

std::string FlagNames(int flags) {
  std::string out;
  for (const Name& n : kNames) {
    if (flags & n.flag) out += (out.empty() ? "" : ",") + std::string(n.name);
  }
  return out.empty() ? "none" : out;
}

int ParseFlagNames(const std::string& names) {
  int flags = 0;
  for (const Name& n : kNames) {
    std::string s = "," + names + ",";
    if (s.find("," + std::string(n.name) + ",") != std::string::npos) flags |= n.flag;
  }
  return flags;
}

pid_t SpawnWithFlags(int flags, const char* path, char* const argv[], char* const envp[],
                     const int* fds, int nfds) {
  long pid = syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  if (pid != 0) return static_cast<pid_t>(pid);
  // Child of a threaded process: async-signal-safe calls only, then exec.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) sigaction(s, &dfl, nullptr);
  if (flags & CLONE_NEWUSER) {
    // We hold every capability in the new user namespace, but execve() would
    // drop them (our uid there is not 0). Keep them as ambient capabilities:
    // the zygote needs them to map its ids and to mount; every runner clears
    // them before it runs code.
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    syscall(SYS_capget, &header, data);
    data[0].inheritable = data[0].permitted;
    data[1].inheritable = data[1].permitted;
    syscall(SYS_capset, &header, data);
    for (int cap = 0; cap < 64; ++cap) prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0);
  }
  // fds[i] becomes fd 3 + i: moved out of the way first, so that no move
  // clobbers a source; dup2 clears close-on-exec on the copies.
  int moved[8];
  for (int i = 0; i < nfds && i < 8; ++i) moved[i] = fds[i] >= 0 ? fcntl(fds[i], F_DUPFD, 64) : -1;
  for (int i = 0; i < nfds && i < 8; ++i) {
    if (moved[i] < 0) continue;
    dup2(moved[i], 3 + i);
    close(moved[i]);
  }
  int devnull = open("/dev/null", O_RDWR);
  dup2(devnull, 0);
  dup2(devnull, 1);
  if (devnull > 3) close(devnull);
  execve(path, argv, envp);
  _exit(127);
}

bool FinishInZygote(int flags, uid_t outer_uid, gid_t outer_gid, std::string* error) {
  if (flags & CLONE_NEWUSER) {
    // Map our own ids to themselves: files the runs write keep their owner.
    char map[64];
    if (!WriteFile("/proc/self/setgroups", "deny", error)) return false;
    snprintf(map, sizeof map, "%u %u 1", outer_uid, outer_uid);
    if (!WriteFile("/proc/self/uid_map", map, error)) return false;
    snprintf(map, sizeof map, "%u %u 1", outer_gid, outer_gid);
    if (!WriteFile("/proc/self/gid_map", map, error)) return false;
  }
  if (flags & CLONE_NEWNS) {
    // Nothing we mount may propagate back to the host.
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      *error = std::string("mount(/, MS_REC|MS_PRIVATE): ") + strerror(errno);
      return false;
    }
  }
  if (flags & CLONE_NEWPID) {
    // A /proc of our own pid namespace: the zygote reads the runs' process
    // trees from it, and the runs see only their namespace.
    if (!(flags & CLONE_NEWNS)) {
      *error = "a pid namespace needs a mount namespace for its /proc";
      return false;
    }
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      *error = std::string("mount(proc, /proc): ") + strerror(errno);
      return false;
    }
  }
  if (flags & CLONE_NEWUTS) {
    const char name[] = "mcp-exec";
    sethostname(name, sizeof name - 1);
  }
  return true;
}

bool ApplyInRunner(int zygote_flags, bool netns, std::string* error) {
  if (!(zygote_flags & CLONE_NEWNS)) return true;
  // A network namespace of its own: its abstract unix socket names and
  // /proc/net are the run's, never another run's.
  int flags = CLONE_NEWNS | CLONE_NEWIPC | (netns ? CLONE_NEWNET : 0);
  if (unshare(flags) != 0) {
    *error = "unshare(" + FlagNames(flags) + "): " + strerror(errno);
    return false;
  }
  return true;
}

bool ProbeRunNamespaces(int zygote_flags, bool* pidns, bool* netns) {
  *pidns = *netns = false;
  if (!(zygote_flags & CLONE_NEWNS)) return true;
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    int code = 0;
    if ((zygote_flags & CLONE_NEWPID) && unshare(CLONE_NEWPID) == 0) code |= 1;
    if ((zygote_flags & CLONE_NEWNET) && unshare(CLONE_NEWNET) == 0) code |= 2;
    _exit(code);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return false;
  *pidns = WEXITSTATUS(status) & 1;
  *netns = WEXITSTATUS(status) & 2;
  return true;
}

void Report(int flags, bool run_pidns, bool run_netns, std::vector<LayerStatus>* layers) {
  const char* fix = geteuid() == 0 || (flags & CLONE_NEWUSER)
                        ? "the host refused clone() with this namespace (seccomp profile or sysctl)"
                        : "run as root, or allow unprivileged user namespaces "
                          "(sysctl kernel.unprivileged_userns_clone=1; in Docker: "
                          "--security-opt seccomp=unconfined or a profile allowing clone/unshare)";
  layers->push_back({"user_namespace", (flags & CLONE_NEWUSER) != 0, false,
                     (flags & CLONE_NEWUSER) ? "the zygote owns a user namespace (not root)"
                     : geteuid() == 0        ? "not needed: running as root"
                                             : "none",
                     (flags & CLONE_NEWUSER) || geteuid() == 0 ? "" : fix});
  layers->push_back(
      {"pid_namespace", (flags & CLONE_NEWPID) != 0, false,
       !(flags & CLONE_NEWPID) ? "runs share the host's pid namespace (seccomp keeps "
                                 "renice and CPU pinning to the caller; Landlock lets "
                                 "a run read only its own /proc entries)"
       : run_pidns             ? "each run has a pid namespace (and /proc) of its own: it sees and "
                                 "touches only its own processes; the supervisor and other runs "
                                 "are invisible"
                   : "runs live in the zygote's pid namespace: the supervisor is invisible",
       (flags & CLONE_NEWPID) ? "" : fix});
  layers->push_back({"network_namespace", (flags & CLONE_NEWNET) != 0, false,
                     !(flags & CLONE_NEWNET)
                         ? "host network namespace (seccomp still denies sockets)"
                     : run_netns ? "one per run, with no interface but a downed loopback: abstract "
                                   "unix socket names and /proc/net are the run's own"
                                 : "no interface but a downed loopback",
                     (flags & CLONE_NEWNET) ? "" : fix});
  layers->push_back({"mount_namespace", (flags & CLONE_NEWNS) != 0, false,
                     (flags & CLONE_NEWNS)
                         ? "one per run: a fresh size-capped tmpfs /tmp (the working "
                           "directory) and /dev/shm, and a private /dev (null, "
                           "zero, full, random, urandom; no ptys)"
                         : "runs see the host's mounts",
                     (flags & CLONE_NEWNS) ? "" : fix});
  layers->push_back({"ipc_namespace", (flags & CLONE_NEWIPC) != 0, false,
                     (flags & CLONE_NEWIPC) ? "one per run" : "shared",
                     (flags & CLONE_NEWIPC) ? "" : fix});
}

}  // namespace mcpexec::sandbox::namespaces
