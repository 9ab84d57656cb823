#include "sandbox/filesystem.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/unique_fd.h"

namespace mcpexec::sandbox::filesystem {
namespace {

// Mount points from /proc/self/mountinfo (field 5), with octal escapes undone.
std::vector<std::string> MountPoints() {
  std::vector<std::string> out;
  std::ifstream f("/proc/self/mountinfo");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string id, parent, devno, root, mp;
    in >> id >> parent >> devno >> root >> mp;
    std::string decoded;
    for (size_t i = 0; i < mp.size(); ++i) {
      if (mp[i] == '\\' && i + 3 < mp.size()) {
        decoded += static_cast<char>(std::stoi(mp.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        decoded += mp[i];
      }
    }
    out.push_back(decoded);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool Under(const std::string& path, const char* dir) {
  size_t n = strlen(dir);
  return path.compare(0, n, dir) == 0 && (path.size() == n || path[n] == '/');
}

// The flags a bind remount must keep: in a user namespace, dropping a locked
// flag (nosuid, nodev, noexec, atime) is refused.
unsigned long KeptFlags(const std::string& mp) {
  struct statvfs st;
  if (statvfs(mp.c_str(), &st) != 0) return 0;
  unsigned long flags = 0;
  if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (st.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (st.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (st.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

bool MountTmpfs(const std::string& where, int64_t bytes, const char* mode, const RunLimits& l,
                std::string* error) {
  std::string opts = "size=" + std::to_string(bytes) + ",mode=" + mode +
                     ",uid=" + std::to_string(l.sandbox_uid) +
                     ",gid=" + std::to_string(l.sandbox_gid);
  if (mount("tmpfs", where.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
    *error = "mount(tmpfs, " + where + ", \"" + opts + "\"): " + strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

bool PrepareReadOnly(std::string* error) {
  bool root_done = false;
  for (const std::string& mp : MountPoints()) {
    // /proc and /dev keep their own rules (/dev/null must stay writable; the
    // kernel guards /proc), and runs get a private /dev/shm anyway.
    if (Under(mp, "/proc") || Under(mp, "/dev")) continue;
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | KeptFlags(mp);
    if (mount(nullptr, mp.c_str(), nullptr, flags, nullptr) != 0) {
      if (mp == "/") {
        *error = std::string("mount(/, MS_REMOUNT|MS_BIND|MS_RDONLY): ") + strerror(errno);
        return false;
      }
      continue;  // e.g. a mount we cannot see into; Landlock still guards it
    }
    if (mp == "/") root_done = true;
  }
  if (!root_done) *error = "/ is not a mount point in this namespace";
  return root_done;
}

namespace {

bool Fail(std::string* error, const std::string& what) {
  *error = what + ": " + strerror(errno);
  return false;
}

bool BindFile(const std::string& from, const std::string& to, std::string* error) {
  if (!UniqueFd(open(to.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644))) {
    return Fail(error, "create " + to);
  }
  if (mount(from.c_str(), to.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return Fail(error, "bind " + from + " on " + to);
  }
  return true;
}

// A private /dev at root/dev: the five harmless devices bound from the
// host's, the usual /dev/fd links, an empty /dev/shm for the run's own
// tmpfs, and nothing else: no ptys, no ptmx, no disks.
bool MakeDev(const std::string& root, std::string* error) {
  std::string dev = root + "/dev";
  if (mkdir(dev.c_str(), 0755) != 0) return Fail(error, "mkdir " + dev);
  if (mount("tmpfs", dev.c_str(), "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755") != 0) {
    return Fail(error, "mount(tmpfs, " + dev + ")");
  }
  for (const char* name : kDevices) {
    if (!BindFile(std::string("/dev/") + name, dev + "/" + name, error)) return false;
  }
  const char* links[][2] = {{"/proc/self/fd", "fd"},
                            {"/proc/self/fd/0", "stdin"},
                            {"/proc/self/fd/1", "stdout"},
                            {"/proc/self/fd/2", "stderr"}};
  for (auto& l : links) {
    if (symlink(l[0], (dev + "/" + l[1]).c_str()) != 0)
      return Fail(error, "symlink /dev/" + std::string(l[1]));
  }
  if (mkdir((dev + "/shm").c_str(), 01777) != 0) return Fail(error, "mkdir /dev/shm");
  if (mount(nullptr, dev.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
            nullptr) != 0) {
    return Fail(error, "remount " + dev + " read-only");
  }
  return true;
}

// Makes every missing folder of path (absolute, below root) on the root's
// tmpfs.
bool MakeParents(const std::string& root, const std::string& path, std::string* error) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    std::string dir = root + path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Fail(error, "mkdir " + dir);
  }
  return true;
}

// One host folder (or file), opened before the minimal root was built (a
// folder under /tmp is hidden by then), at root + its RUN_PATH.
bool BindHostFolder(const std::string& root, const mounts::Mount& m, int source,
                    std::string* error) {
  const std::string to = root + m.run;
  const std::string from = "/proc/self/fd/" + std::to_string(source);
  struct stat st;
  if (fstat(source, &st) != 0) return Fail(error, "stat " + m.host);
  if (!MakeParents(root, m.run, error)) return false;
  if (S_ISDIR(st.st_mode) ? mkdir(to.c_str(), 0755) != 0 && errno != EEXIST
                          : !UniqueFd(open(to.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644))) {
    return Fail(error, "make " + m.run);
  }
  // Not MS_REC: a mount below the folder on the host stays out, as an
  // empty directory.
  if (mount(from.c_str(), to.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return Fail(error, "bind " + m.host + " on " + m.run);
  }
  // The bind took the source's flags (read-only since PrepareReadOnly); set
  // the mount's own, keeping what the host locked.
  unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | KeptFlags(to);
  if (!m.exec) flags |= MS_NOEXEC;
  if (!m.writable) flags |= MS_RDONLY;
  if (mount(nullptr, to.c_str(), nullptr, flags, nullptr) != 0) {
    if (m.writable && errno == EPERM) {
      *error = ReadOnlyForRw(m.host);
      return false;
    }
    return Fail(error, "remount " + m.run);
  }
  return true;
}

}  // namespace

std::string ReadOnlyForRw(const std::string& host) {
  return host +
         " is read-only where the server runs (mounted read-only by the host or the container), so "
         "it cannot be rw in runs";
}

const char* const kDevices[5] = {"null", "zero", "full", "random", "urandom"};
const char* const kSystemDirs[8] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc"};

bool PrepareMinimalRoot(const std::vector<mounts::Mount>& mounts, std::string* error,
                        std::string* mount_error) {
  // Built on a tmpfs over /tmp of our own mount namespace (the host's /tmp
  // is untouched), then made the root with pivot_root.
  const std::string root = "/tmp";
  // The operator's folders, held open (O_PATH) from before the tmpfs below
  // hides what /tmp holds.
  std::vector<UniqueFd> sources;
  for (const mounts::Mount& m : mounts) {
    sources.emplace_back(open(m.host.c_str(), O_PATH | O_CLOEXEC));
    if (!sources.back()) {
      Fail(mount_error, "open " + m.host);
      *error = *mount_error;
      return false;
    }
  }
  if (mount("tmpfs", root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0) {
    return Fail(error, "mount(tmpfs, " + root + ")");
  }
  for (const char* name : kSystemDirs) {
    std::string from = std::string("/") + name, to = root + "/" + name;
    struct stat st;
    if (lstat(from.c_str(), &st) != 0) continue;  // not on this system
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t n = readlink(from.c_str(), target, sizeof target - 1);
      if (n < 0) return Fail(error, "readlink " + from);
      target[n] = '\0';
      if (symlink(target, to.c_str()) != 0) return Fail(error, "symlink " + to);
      continue;
    }
    if (!S_ISDIR(st.st_mode)) continue;
    // Read-only already (PrepareReadOnly): bind mounts keep the flag.
    if (mkdir(to.c_str(), 0755) != 0) return Fail(error, "mkdir " + to);
    if (mount(from.c_str(), to.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return Fail(error, "bind " + from);
    }
  }
  // The host's identity is not the run's business.
  struct stat st;
  if (stat((root + "/etc/machine-id").c_str(), &st) == 0 &&
      mount("/dev/null", (root + "/etc/machine-id").c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return Fail(error, "mask /etc/machine-id");
  }
  if (mkdir((root + "/proc").c_str(), 0555) != 0 ||
      mount("/proc", (root + "/proc").c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return Fail(error, "bind /proc");
  }
  if (!MakeDev(root, error)) return false;
  if (mkdir((root + "/tmp").c_str(), 01777) != 0) return Fail(error, "mkdir /tmp");
  if (chmod((root + "/tmp").c_str(), 01777) != 0) return Fail(error, "chmod /tmp");
  for (size_t i = 0; i < mounts.size(); ++i) {
    if (!BindHostFolder(root, mounts[i], sources[i].get(), mount_error)) {
      *error = *mount_error;
      return false;
    }
  }
  if (chdir(root.c_str()) != 0) return Fail(error, "chdir " + root);
  // pivot_root(".", "."): the old root ends up under the new one, and is
  // then detached (bubblewrap's and runc's way, no directory needed).
  if (syscall(SYS_pivot_root, ".", ".") != 0) return Fail(error, "pivot_root");
  if (umount2(".", MNT_DETACH) != 0) return Fail(error, "detach the old root");
  if (chdir("/") != 0) return Fail(error, "chdir /");
  if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
            nullptr) != 0) {
    return Fail(error, "remount / read-only");
  }
  return true;
}

bool MountRunProc(std::string* error) {
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return Fail(error, "mount(proc, /proc)");
  }
  // What the kernel tells about the host, as Docker masks it.
  for (const char* f :
       {"/proc/cmdline",      "/proc/kcore",    "/proc/keys",     "/proc/timer_list",
        "/proc/sched_debug",  "/proc/kallsyms", "/proc/modules",  "/proc/config.gz",
        "/proc/vmallocinfo",  "/proc/iomem",    "/proc/ioports",  "/proc/partitions",
        "/proc/diskstats",    "/proc/swaps",    "/proc/mtrr",     "/proc/buddyinfo",
        "/proc/pagetypeinfo", "/proc/zoneinfo", "/proc/slabinfo", "/proc/schedstat",
        "/proc/devices",      "/proc/misc",     "/proc/consoles", "/proc/crypto"}) {
    struct stat st;
    if (stat(f, &st) != 0) continue;
    if (mount("/dev/null", f, nullptr, MS_BIND, nullptr) != 0)
      return Fail(error, std::string("mask ") + f);
  }
  for (const char* d : {"/proc/sys", "/proc/sysvipc", "/proc/scsi", "/proc/acpi", "/proc/bus",
                        "/proc/fs", "/proc/irq", "/proc/driver", "/proc/tty"}) {
    struct stat st;
    if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (mount("tmpfs", d, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,mode=0555") != 0) {
      return Fail(error, std::string("mask ") + d);
    }
  }
  return true;
}

bool ApplyInRunner(bool mount_ns, const RunLimits& limits, RunMounts* mounts, std::string* error) {
  if (!mount_ns) return true;
  if (!MountTmpfs("/tmp", limits.disk_bytes, "1777", limits, error)) return false;
  struct stat st;
  if (stat("/dev/shm", &st) == 0 &&
      !MountTmpfs("/dev/shm", limits.scratch_bytes, "1777", limits, error)) {
    return false;
  }
  mounts->private_tmp = true;
  mounts->workdir = "/tmp";
  return true;
}

}  // namespace mcpexec::sandbox::filesystem
