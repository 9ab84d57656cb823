#include "sandbox/lockdown.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

#include "sandbox/credentials.h"
#include "sandbox/filesystem.h"
#include "sandbox/landlock.h"
#include "sandbox/limits.h"
#include "sandbox/namespaces.h"
#include "sandbox/seccomp_policy.h"

namespace mcpexec::sandbox {
namespace {

// Exit codes of the probe child.
enum Probe {
  kProbeOk = 0,
  kProbeNoNewPrivs = 2,
  kProbeLandlock = 3,
  kProbeSeccomp = 4,
  kProbeSocket = 5
};

int RunProbe(const Sandbox& sb) {
  std::string error;
  if (!credentials::ApplyNoNewPrivs(&error)) return kProbeNoNewPrivs;
  if (sb.landlock_abi > 0 &&
      !landlock::Apply(sb.landlock_abi, {{"/tmp"}, {"/dev/null"}, {"/"}, {}, {}}, &error)) {
    return kProbeLandlock;
  }
  if (!seccomp_policy::Apply(sb.seccomp_program, &error)) return kProbeSeccomp;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 || errno != EPERM) return kProbeSocket;
  return kProbeOk;
}

}  // namespace

void PrepareEarly(Sandbox* sb) {
  sb->landlock_abi = landlock::ProbeAbi();
  if (!seccomp_policy::Prepare(&sb->seccomp_program, &sb->seccomp_error)) return;
  pid_t pid = fork();
  if (pid == 0) _exit(RunProbe(*sb));
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) {
    sb->seccomp_error = "could not fork the probe";
    return;
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == kProbeLandlock) {
    sb->landlock_abi = 0;  // announced, but refused: treat as absent
  } else if (code == kProbeSeccomp) {
    sb->seccomp_error =
        "the kernel refused the filter (prctl(PR_SET_SECCOMP)); CONFIG_SECCOMP_FILTER?";
    return;
  } else if (code == kProbeSocket) {
    sb->seccomp_error = "a probe under the filter could still create an AF_INET socket";
    return;
  } else if (code != kProbeOk) {
    sb->seccomp_error = "the probe failed (exit " + std::to_string(code) + ")";
    return;
  }
  sb->seccomp_ok = true;
}

namespace {

// What a run may read: the interpreter's system folders, /etc without the
// host's identity, and of /proc only the run's own processes (all of a
// private /proc where the run has its own pid namespace; else /proc/self
// and a few files that say nothing about other processes).
std::vector<std::string> ReadableByRuns(const Sandbox& sb) {
  std::vector<std::string> out;
  for (const char* d : filesystem::kSystemDirs) {
    if (strcmp(d, "etc") != 0) out.push_back(std::string("/") + d);
  }
  if (sb.minimal_root) {
    out.push_back("/etc");  // machine-id is masked in the minimal root
  } else if (DIR* d = opendir("/etc")) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != ".." && n != "machine-id") out.push_back("/etc/" + n);
    }
    closedir(d);
  }
  if (sb.run_pidns) {
    out.push_back("/proc");
  } else {
    // "/proc/self" is resolved when the rule is added: the runner's own pid.
    for (const char* f : {"/proc/self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat",
                          "/proc/loadavg", "/proc/uptime", "/proc/version", "/proc/filesystems"}) {
      out.push_back(f);
    }
  }
  return out;
}

}  // namespace

namespace {

bool OnReadOnlyMount(const std::string& path) {
  struct statvfs st {};
  return statvfs(path.c_str(), &st) == 0 && (st.f_flag & ST_RDONLY);
}

// Where runs find a host folder: its RUN_PATH where the zygote bound it,
// else where the host has it.
const std::string& RunsFindAt(const Sandbox& sb, const mounts::Mount& m) {
  return sb.mounts_bound ? m.run : m.host;
}

}  // namespace

void PrepareLate(Sandbox* sb) {
  if (sb->ns_flags & CLONE_NEWNS) {
    sb->readonly_root = filesystem::PrepareReadOnly(&sb->readonly_error);
    if (sb->readonly_root)
      sb->minimal_root =
          filesystem::PrepareMinimalRoot(sb->mounts, &sb->minimal_root_error, &sb->mounts_error);
    sb->mounts_bound = sb->minimal_root;
    // Never a view half made: the zygote reports it and the supervisor
    // starts it again with fewer namespaces.
    if (!sb->minimal_root) sb->readonly_root = false, sb->readonly_error = sb->minimal_root_error;
    sb->readable = ReadableByRuns(*sb);
    return;
  }
  sb->readable = ReadableByRuns(*sb);
  // Runs will write in the rw folders where the host has them: one the host
  // mounted read-only is refused as the bind would be.
  for (const mounts::Mount& m : sb->mounts) {
    if (m.writable && OnReadOnlyMount(m.host)) {
      sb->mounts_error = filesystem::ReadOnlyForRw(m.host);
      break;
    }
  }
  // No mount namespace of ours, but the host may have made / read-only
  // (docker run --read-only): that holds just the same.
  struct statvfs st;
  if (statvfs("/", &st) == 0 && (st.f_flag & ST_RDONLY)) {
    sb->readonly_root = true;
    sb->readonly_by_host = true;
  } else {
    sb->readonly_error = "no mount namespace";
  }
}

std::vector<LayerStatus> Report(const Sandbox& sb) {
  std::vector<LayerStatus> layers;
  namespaces::Report(sb.ns_flags, sb.run_pidns, sb.run_netns, &layers);
  layers.push_back({"filesystem_readonly", sb.readonly_root, false,
                    sb.readonly_by_host
                        ? "/ is read-only (the host's doing, e.g. docker --read-only)"
                    : sb.readonly_root ? "a minimal root, all read-only: the system's /usr, /bin, "
                                         "/sbin, /lib*, /etc (no machine-id), /proc and a private "
                                         "/dev; nothing else of the host; runs write only in "
                                         "size-capped tmpfs"
                                       : "mounts stay as the host has them: " + sb.readonly_error,
                    sb.readonly_root ? "" : "needs a mount namespace (see mount_namespace)"});
  bool root = geteuid() == 0;
  layers.push_back({"credentials", true, false,
                    root ? "runs become uid/gid " + std::to_string(sb.limits.sandbox_uid) +
                               " with no supplementary groups"
                         : "runs keep the server's uid " + std::to_string(getuid()) + " (not root)",
                    ""});
  layers.push_back(
      {"capabilities", true, false, "all dropped, bounding and ambient sets included", ""});
  layers.push_back({"no_new_privs", true, false, "set before Landlock and seccomp", ""});
  layers.push_back({"rlimits", true, false, limits::Describe(sb.limits), ""});
  layers.push_back(cgroups::Report(sb.cgroups, sb.limits));
  std::string abi = std::to_string(sb.landlock_abi);
  layers.push_back(
      {"landlock", sb.landlock_abi > 0, false,
       sb.landlock_abi > 0
           ? "ABI " + abi + ": reads only the system's folders (" +
                 (sb.run_pidns
                      ? std::string("/proc: the run's own")
                      : std::string("/proc: the run's own process and a few system files")) +
                 "), writes only in the run's directories" +
                 (sb.landlock_abi >= 4 ? ", no TCP bind/connect" : "") +
                 (sb.landlock_abi >= 6 ? ", signals and abstract unix sockets scoped to the run"
                                       : "; signals are NOT scoped (needs ABI 6, Linux 6.12)")
           : "not available",
       sb.landlock_abi > 0 ? "" : "Linux >= 5.13 with landlock in the lsm= boot parameter"});
  layers.push_back({"seccomp", sb.seccomp_ok, true,
                    sb.seccomp_ok ? "default-deny allowlist (native architecture), loaded last; "
                                    "no memfd, SysV shm or inotify; nice and CPU affinity of the "
                                    "caller itself only"
                                  : sb.seccomp_error,
                    sb.seccomp_ok ? ""
                                  : "a kernel with CONFIG_SECCOMP_FILTER; in a container, do not "
                                    "run with a profile that forbids seccomp()"});
  layers.push_back({"network", sb.seccomp_ok, true,
                    sb.seccomp_ok
                        ? std::string("socket() of every family but AF_UNIX is denied") +
                              ((sb.ns_flags & CLONE_NEWNET) ? "; no interfaces either" : "")
                        : "cannot be enforced without seccomp",
                    sb.seccomp_ok ? "" : "see seccomp"});
  return layers;
}

std::vector<MountView> Mounts(const Sandbox& sb) {
  std::vector<MountView> out;
  for (const mounts::Mount& m : sb.mounts) {
    MountView v{RunsFindAt(sb, m), m.host, m.writable, m.exec, "", true};
    if (sb.mounts_bound) {
      v.how = std::string("bind mount at ") + m.run + ", nodev, nosuid" +
              (m.exec ? "" : ", noexec") + (m.writable ? "" : ", read-only (EROFS)");
    } else {
      // No mount namespace: the folder is where the host has it.
      v.metadata_guarded = m.writable || OnReadOnlyMount(m.host);
      v.how = sb.landlock_abi > 0
                  ? std::string("no mount namespace: Landlock grants it at its host path") +
                        (m.writable ? ": read and write files and folders, no devices, fifos, "
                                      "sockets or symlinks"
                                    : ": read only") +
                        (m.exec ? "" : ", no execution") +
                        (v.metadata_guarded ? ""
                                            : "; its mount is writable, so chmod and utime are "
                                              "guarded by file ownership only (mount it read-only, "
                                              "e.g. docker -v ...:ro)")
                  : "no mount namespace and no Landlock: runs reach it, like every other host "
                    "path, as far as the uid's permissions go";
    }
    out.push_back(std::move(v));
  }
  return out;
}

namespace {

// Landlock's ruleset with every rule known before the run: the system
// folders (many paths: /etc entry by entry where there is no minimal root),
// the devices, /dev/shm. Invalid without Landlock, or on error (*error set).
UniqueFd PrepareLandlock(const Sandbox& sb, std::string* error) {
  if (sb.landlock_abi <= 0) return UniqueFd();
  landlock::Rules rules;
  // /dev/shm: private where mounts are allowed; elsewhere it stays writable
  // so that multiprocessing's semaphores work (SECURITY.md: the server
  // purges what runs leave there).
  rules.writable = {"/dev/shm"};
  for (const char* dev : filesystem::kDevices) rules.devices.push_back(std::string("/dev/") + dev);
  rules.readable = sb.readable;
  // Every runner adds these: the paths only, not the report's words.
  for (const mounts::Mount& m : sb.mounts) {
    rules.granted.push_back({RunsFindAt(sb, m), m.writable, m.exec});
  }
  // In the minimal root there is nothing but system folders to list.
  // Elsewhere /proc may be listed (pids are no secret: kill(pid, 0) finds
  // them too), but of its files only the run's own may be read.
  rules.listable = {sb.minimal_root ? "/" : "/proc"};
  return landlock::Prepare(sb.landlock_abi, rules, error);
}

// Landlock (with the run's directory added to the prepared ruleset), then
// seccomp, last.
bool Seal(const Sandbox& sb, LockState* st, std::string* error) {
  if (sb.landlock_abi > 0) {
    UniqueFd ruleset = std::move(st->landlock_ruleset);
    if (!ruleset) ruleset = PrepareLandlock(sb, error);
    if (!ruleset) return false;
    if (!landlock::AddWritable(sb.landlock_abi, ruleset.get(), st->workdir, error)) return false;
    if (!landlock::Restrict(std::move(ruleset), error)) return false;
  }
  // Runs stay non-dumpable (credentials made them so): their /proc entries
  // are root's, so a concurrent run or a spare of the same uid cannot even
  // list their fd numbers, which needs only ownership, not a ptrace check.
  // The price: a run cannot read its own /proc/self/environ (os.environ is
  // unaffected).
  // Last: after this, only the allowlist.
  if (!sb.seccomp_ok) {
    *error = "seccomp is not available: " + sb.seccomp_error;
    return false;
  }
  return seccomp_policy::Apply(sb.seccomp_program, error);
}

// The CPU limit of a runner that does not know its timeout yet.
constexpr int64_t kAheadCpuSeconds = 86400;

}  // namespace

void LockdownAhead(const Sandbox& sb, LockState* st) {
  st->ahead_done = true;
  filesystem::RunMounts mounts;
  std::string& e = st->error;
  if (!namespaces::ApplyInRunner(sb.ns_flags, sb.run_netns, &e) ||
      (sb.run_pidns && !filesystem::MountRunProc(&e)) ||
      !filesystem::ApplyInRunner((sb.ns_flags & CLONE_NEWNS) != 0, sb.limits, &mounts, &e) ||
      !limits::ApplyInRunner(sb.limits, kAheadCpuSeconds, &e) ||
      !credentials::ApplyInRunner(sb.limits, sb.run_pidns ? 1 : sb.zygote_pid, &e) ||
      !credentials::ApplyNoNewPrivs(&e)) {
    return;
  }
  st->workdir = mounts.workdir;
  // With a private /tmp the run's directory is known already: seal now.
  // Without one, everything but that directory is made ready.
  if (mounts.private_tmp) {
    st->sealed = Seal(sb, st, &e);
  } else if (sb.landlock_abi > 0) {
    st->landlock_ruleset = PrepareLandlock(sb, &e);
  }
}

bool LockdownFinish(const Sandbox& sb, LockState* st, const std::string& workdir, int64_t timeout_s,
                    std::string* cwd, std::string* error) {
  if (!st->ahead_done) LockdownAhead(sb, st);
  if (!st->error.empty()) {
    *error = st->error;
    return false;
  }
  if (st->workdir.empty()) st->workdir = workdir;
  *cwd = st->workdir;
  if (chdir(st->workdir.c_str()) != 0) {
    *error = "chdir(" + st->workdir + "): " + strerror(errno);
    return false;
  }
  if (!limits::LowerCpuLimit(timeout_s, error)) return false;
  return st->sealed || Seal(sb, st, error);
}

}  // namespace mcpexec::sandbox
