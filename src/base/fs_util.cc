#include "base/fs_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"

namespace mcpexec {

std::string MakePrivateDir(const std::string& root, const std::string& prefix) {
  std::string tmpl = root + "/" + prefix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) return "";
  return std::string(buf.data());
}

bool EnsureDir(const std::string& path, unsigned mode) {
  if (mkdir(path.c_str(), mode) == 0) return true;
  struct stat st;
  return errno == EEXIST && lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

namespace {

// Empties the directory open at dfd. Depth is bounded by the run's own
// nesting, which the file-size and inode limits bound in turn.
bool EmptyDirAt(int dfd, int depth) {
  if (depth > 4096) return false;
  int dup_fd = dup(dfd);
  if (dup_fd < 0) return false;
  DIR* dir = fdopendir(dup_fd);
  if (!dir) {
    close(dup_fd);
    return false;
  }
  bool ok = true;
  std::vector<std::string> subdirs;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (unlinkat(dfd, name.c_str(), 0) == 0) continue;
    if (errno == EISDIR || errno == EPERM || errno == ENOTEMPTY || errno == EEXIST) {
      subdirs.push_back(name);
    } else if (errno != ENOENT) {
      ok = false;
    }
  }
  closedir(dir);
  for (const std::string& name : subdirs) {
    if (unlinkat(dfd, name.c_str(), AT_REMOVEDIR) == 0) continue;
    // The code may have left it without permissions for its owner.
    fchmodat(dfd, name.c_str(), 0700, 0);
    UniqueFd sub(openat(dfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) {
      ok = false;
      continue;
    }
    ok = EmptyDirAt(sub.get(), depth + 1) && ok;
    sub.Reset();
    if (unlinkat(dfd, name.c_str(), AT_REMOVEDIR) != 0) ok = false;
  }
  return ok;
}

}  // namespace

std::optional<std::string> RelativePathProblem(const std::string& path) {
  if (path.empty()) return std::string("is empty");
  if (path.find('\0') != std::string::npos) return std::string("holds a NUL byte");
  if (path.front() == '/') {
    return std::string("is absolute; give a path relative to the working directory");
  }
  if (path.size() > 1024) return std::string("is longer than 1024 bytes");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string_view part(path.data() + start, end - start);
    if (part.empty()) return std::string("has an empty part (a trailing or double /)");
    if (part == "..") return std::string("leaves the working directory (..)");
    if (part == ".") return std::string("has a . part");
    if (part.size() > 255) return std::string("has a part longer than 255 bytes");
    start = end + 1;
  }
  return std::nullopt;
}

bool RemoveTree(const std::string& path) {
  chmod(path.c_str(), 0700);
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return errno == ENOENT;
  bool ok = EmptyDirAt(fd.get(), 0);
  fd.Reset();
  return rmdir(path.c_str()) == 0 && ok;
}

}  // namespace mcpexec
