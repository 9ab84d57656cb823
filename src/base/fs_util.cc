#include "base/fs_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <ctime>
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

bool HoldDir(const std::string& dir, UniqueFd* hold) {
  UniqueFd fd(open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid() || flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false;
  *hold = std::move(fd);
  return true;
}

std::vector<std::string> SweepUnheldDirs(const std::string& root,
                                         const std::vector<std::string>& prefixes,
                                         std::chrono::seconds min_age) {
  std::vector<std::string> removed;
  DIR* d = opendir(root.c_str());
  if (!d) return removed;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    for (const std::string& prefix : prefixes) {
      if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) {
        continue;
      }
      bool mkdtemp_like = true;
      for (size_t i = prefix.size(); i < name.size(); ++i) {
        mkdtemp_like = mkdtemp_like && isalnum(static_cast<unsigned char>(name[i]));
      }
      if (mkdtemp_like) names.push_back(name);
    }
  }
  closedir(d);
  const time_t now = time(nullptr);
  for (const std::string& name : names) {
    const std::string dir = root + "/" + name;
    struct stat st;
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        now - st.st_mtime < min_age.count()) {
      continue;
    }
    UniqueFd lock(open((dir + "/.lock").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!lock.valid() || flock(lock.get(), LOCK_EX | LOCK_NB) != 0) continue;  // none, or held
    if (RemoveTree(dir)) removed.push_back(dir);
  }
  return removed;
}

bool EnsureDir(const std::string& path, unsigned mode) {
  if (mkdir(path.c_str(), mode) == 0) return true;
  struct stat st;
  return errno == EEXIST && lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

namespace {

// One pass over the directory open at dfd: removes what is not a directory
// and every empty subdirectory; the names of the others (not empty, or not
// removable) are returned.
bool RemoveEntriesAt(int dfd, std::vector<std::string>* busy) {
  int dup_fd = dup(dfd);
  if (dup_fd < 0) return false;
  DIR* dir = fdopendir(dup_fd);
  if (!dir) {
    close(dup_fd);
    return false;
  }
  rewinddir(dir);  // the offset is shared with dfd's: an earlier pass left it at the end
  bool ok = true;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (unlinkat(dfd, name.c_str(), 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR && errno != EPERM) {
      ok = false;
      continue;
    }
    if (unlinkat(dfd, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) continue;
    busy->push_back(std::move(name));
  }
  closedir(dir);
  return ok;
}

// Moves the directory `name` in `from` up to `root` under a fresh name.
bool MoveUp(int from, const std::string& name, int root, uint64_t* counter) {
  for (int tries = 0; tries < 1000; ++tries) {
    std::string fresh = ".mcp-exec-rm-" + std::to_string((*counter)++);
    if (renameat2(from, name.c_str(), root, fresh.c_str(), RENAME_NOREPLACE) == 0) return true;
    if (errno != EEXIST) return false;
  }
  return false;
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

// No recursion and no chain of open directories, so no depth is too deep
// (a run can nest directories as deep as its inodes allow): every directory
// below the top one is first moved up to the top, its subdirectories moved
// up beside it, then removed once it holds nothing. Two directories are open
// at a time. A directory is moved up at most once, and a pass that neither
// removes nor moves anything ends the loop.
bool RemoveTree(const std::string& path) {
  chmod(path.c_str(), 0700);
  UniqueFd top(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top) return errno == ENOENT;
  bool ok = true;
  uint64_t counter = 0;
  for (;;) {
    std::vector<std::string> busy;
    ok = RemoveEntriesAt(top.get(), &busy) && ok;
    bool progress = false;
    for (const std::string& name : busy) {
      // The code may have left it without permissions for its owner.
      fchmodat(top.get(), name.c_str(), 0700, 0);
      UniqueFd dir(
          openat(top.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!dir) continue;
      std::vector<std::string> subdirs;
      RemoveEntriesAt(dir.get(), &subdirs);
      for (const std::string& sub : subdirs) {
        fchmodat(dir.get(), sub.c_str(), 0700, 0);
        if (MoveUp(dir.get(), sub, top.get(), &counter)) progress = true;
      }
      dir.Reset();
      if (unlinkat(top.get(), name.c_str(), AT_REMOVEDIR) == 0) progress = true;
    }
    if (busy.empty() || !progress) {
      ok = ok && busy.empty();
      break;
    }
  }
  top.Reset();
  return rmdir(path.c_str()) == 0 && ok;
}

}  // namespace mcpexec
