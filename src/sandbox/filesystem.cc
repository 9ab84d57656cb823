#include "sandbox/filesystem.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

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
                     ",uid=" + std::to_string(l.sandbox_uid) + ",gid=" + std::to_string(l.sandbox_gid);
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

bool ApplyInRunner(bool mount_ns, const RunLimits& limits, RunMounts* mounts, std::string* error) {
  if (!mount_ns) return true;
  if (!MountTmpfs("/tmp", limits.disk_bytes, "1777", limits, error)) return false;
  struct stat st;
  if (stat("/dev/shm", &st) == 0 && !MountTmpfs("/dev/shm", limits.scratch_bytes, "1777", limits, error)) {
    return false;
  }
  mounts->private_tmp = true;
  mounts->workdir = "/tmp";
  return true;
}

}  // namespace mcpexec::sandbox::filesystem
