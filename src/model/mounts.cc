#include "model/mounts.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace mcpexec::mounts {
namespace {

// Folders no mount may sit on or under (where runs find it): what the
// minimal root and the sandbox are made of, and the run's own /tmp.
const char* const kReservedRunPaths[] = {"/usr",   "/bin",    "/sbin", "/lib",  "/lib32",
                                         "/lib64", "/libx32", "/etc",  "/proc", "/dev",
                                         "/sys",   "/tmp",    "/boot"};
// Host folders no mount may show at all: the kernel's views of every
// process (the server's environment among them) and of the devices.
const char* const kHiddenHostPaths[] = {"/proc", "/sys", "/dev"};
// Host folders the server runs from: never writable by runs.
const char* const kSystemHostPaths[] = {"/usr",   "/bin",    "/sbin", "/lib", "/lib32",
                                        "/lib64", "/libx32", "/etc",  "/boot"};

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, sep)) out.push_back(item);
  if (!text.empty() && text.back() == sep) out.emplace_back();
  return out;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "/a//b/" -> "/a/b"; refuses relative paths and "." or ".." components.
std::string Normalise(const std::string& path, const char* what, std::string* out) {
  if (path.empty() || path[0] != '/') return std::string(what) + " must be an absolute path";
  std::string n;
  for (const std::string& part : Split(path, '/')) {
    if (part.empty()) continue;
    if (part == "." || part == "..")
      return std::string(what) + " must not hold \".\" or \"..\" components";
    n += "/" + part;
  }
  *out = n.empty() ? "/" : n;
  return "";
}

bool Overlap(const std::string& a, const std::string& b) {
  return IsAtOrUnder(a, b) || IsAtOrUnder(b, a);
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

}  // namespace

bool IsAtOrUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path.compare(0, dir.size(), dir) == 0 &&
         (path.size() == dir.size() || path[dir.size()] == '/');
}

std::string Parse(const std::string& text, std::vector<Mount>* out) {
  out->clear();
  for (const std::string& raw : Split(text, ',')) {
    const std::string item = Trim(raw);
    if (item.empty()) continue;
    const std::string where = "\"" + item + "\": ";
    std::vector<std::string> parts = Split(item, ':');
    if (parts.size() < 2 || parts.size() > 4) {
      return where + "must be HOST_PATH:RUN_PATH[:ro|:rw][:exec] (paths cannot hold ':' or ',')";
    }
    Mount m;
    std::string err = Normalise(parts[0], "HOST_PATH", &m.host);
    if (err.empty()) err = Normalise(parts[1], "RUN_PATH", &m.run);
    if (!err.empty()) return where + err;
    bool mode_seen = false;
    for (size_t i = 2; i < parts.size(); ++i) {
      if ((parts[i] == "ro" || parts[i] == "rw") && !mode_seen && i == 2) {
        m.writable = parts[i] == "rw";
        mode_seen = true;
      } else if (parts[i] == "exec" && !m.exec && i == parts.size() - 1) {
        m.exec = true;
      } else {
        return where + "unknown mode \"" + parts[i] + "\" (ro, rw, then optionally exec)";
      }
    }
    out->push_back(m);
  }
  return "";
}

std::string Check(std::vector<Mount>* mounts, const std::string& workdir_root,
                  const std::string& self_exe) {
  std::string root;
  if (!Normalise(workdir_root, "MCP_EXEC_WORKDIR_ROOT", &root).empty()) root = workdir_root;
  for (Mount& m : *mounts) {
    const std::string where = "\"" + m.host + ":" + m.run + "\": ";
    char real[PATH_MAX];
    if (!realpath(m.host.c_str(), real)) {
      return where + "HOST_PATH " + m.host + " cannot be used (" + strerror(errno) + ")";
    }
    struct stat st;
    if (stat(real, &st) != 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
      return where + "HOST_PATH " + m.host + " is neither a folder nor a regular file";
    }
    m.host = real;
    if (m.run == "/") return where + "RUN_PATH must not be /";
    for (const char* reserved : kReservedRunPaths) {
      if (IsAtOrUnder(m.run, reserved)) {
        return where + "RUN_PATH " + m.run + " would sit on or under " + reserved +
               ", which the sandbox needs as it is";
      }
    }
    if (Overlap(m.run, root)) {
      return where + "RUN_PATH " + m.run + " overlaps MCP_EXEC_WORKDIR_ROOT " + root +
             ", where the runs' own directories are";
    }
    for (const char* hidden : kHiddenHostPaths) {
      if (Overlap(m.host, hidden)) {
        return where + "HOST_PATH " + m.host + " would show " + hidden +
               " of the host (every process's environment and the devices)";
      }
    }
    if (IsAtOrUnder(root, m.host)) {
      return where + "HOST_PATH " + m.host + " holds MCP_EXEC_WORKDIR_ROOT " + root +
             ": runs would see each other's directories";
    }
    if (IsAtOrUnder(m.host, root) && m.host.size() > root.size()) {
      std::string first = m.host.substr(root == "/" ? 1 : root.size() + 1);
      first = first.substr(0, first.find('/'));
      if (first.rfind("mcp-exec-", 0) == 0) {
        return where + "HOST_PATH " + m.host + " is one of the server's own directories";
      }
    }
    if (m.writable) {
      for (const char* system : kSystemHostPaths) {
        if (Overlap(m.host, system)) {
          return where + "rw on " + m.host + ", which overlaps " + system +
                 ", a folder the server itself runs from";
        }
      }
      if (!self_exe.empty() && Overlap(m.host, Dirname(self_exe))) {
        return where + "rw on " + m.host + ", which overlaps " + Dirname(self_exe) +
               ", the folder of the server's own binary";
      }
    }
  }
  for (size_t i = 0; i < mounts->size(); ++i) {
    for (size_t j = 0; j < mounts->size(); ++j) {
      if (i == j) continue;
      const Mount &a = (*mounts)[i], &b = (*mounts)[j];
      if (IsAtOrUnder(a.run, b.run)) {
        return "\"" + a.host + ":" + a.run + "\" and \"" + b.host + ":" + b.run +
               "\": two mounts on one path (RUN_PATH " + a.run +
               (a.run == b.run ? " twice)" : " lies inside " + b.run + ")");
      }
      // Where there is no mount namespace, Landlock grants the host paths,
      // and a folder's rights reach below it: a read-only mount inside a
      // writable one would be writable.
      if (!a.writable && b.writable && IsAtOrUnder(a.host, b.host)) {
        return "\"" + a.host + ":" + a.run + "\" is read-only but lies inside the read-write \"" +
               b.host + ":" + b.run + "\"";
      }
    }
  }
  return "";
}

std::string Format(const std::vector<Mount>& mounts) {
  std::string out;
  for (const Mount& m : mounts) {
    if (!out.empty()) out += ",";
    out += m.host + ":" + m.run + (m.writable ? ":rw" : ":ro") + (m.exec ? ":exec" : "");
  }
  return out;
}

std::string ModeText(const Mount& m) {
  return std::string(m.writable ? "read-write" : "read-only") + (m.exec ? ", executable" : "");
}

std::string AccessWarning(const Mount& m, unsigned uid, unsigned gid) {
  struct stat st;
  if (uid == 0 || stat(m.host.c_str(), &st) != 0) return "";
  const bool dir = S_ISDIR(st.st_mode);
  const int shift = st.st_uid == uid ? 6 : st.st_gid == gid ? 3 : 0;
  const unsigned bits = (st.st_mode >> shift) & 7;
  const bool enter = !dir || (bits & 1);
  std::string cannot;
  if (!(bits & 4) || !enter) {
    cannot = dir ? "list or read files in" : "read";
  } else if (m.writable && !(bits & 2)) {
    cannot = dir ? "write in" : "write";
  }
  if (cannot.empty()) return "";
  char mode[8];
  snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  const std::string id = std::to_string(uid);
  return "MCP_EXEC_MOUNTS: runs (uid " + id + ") cannot " + cannot + " " + m.host + " (" +
         (m.writable ? "rw" : "ro") + "; owner uid " + std::to_string(st.st_uid) + ", group " +
         std::to_string(st.st_gid) + ", mode " + mode +
         "), so a run that touches it gets PermissionError: chown -R " + id + ":" +
         std::to_string(gid) + " " + m.host +
         (m.writable ? ", or mount it read-only" : ", or chmod -R o+rX " + m.host) +
         " (doctor names the runs' uid)";
}

}  // namespace mcpexec::mounts
