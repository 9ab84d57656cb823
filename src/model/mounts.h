// Host folders in runs (MCP_EXEC_MOUNTS): "HOST_PATH:RUN_PATH[:ro|:rw][:exec]"
// items, comma-separated. Read by the config (which also checks them against
// the disk and the server's own paths) and by the zygote (which binds them,
// or grants them to Landlock where it has no mount namespace).
#pragma once

#include <string>
#include <vector>

namespace mcpexec::mounts {

struct Mount {
  std::string host;  // absolute; canonical once Check ran
  std::string run;   // absolute, normalised: where runs find it
  bool writable = false;
  bool exec = false;  // files in it may be executed (noexec otherwise)
};

// Syntax only: every item HOST:RUN with an optional mode (ro, the default,
// or rw) and an optional exec; both paths absolute, without "." or ".."
// components. "" or the reason, naming the item.
std::string Parse(const std::string& text, std::vector<Mount>* out);

// What only the disk and the rest of the config can tell: each host path
// exists (a folder or a file; made canonical), no RUN_PATH on or under a
// system folder, /tmp or the runs' directories, no two mounts on one path
// (or one inside another), no host path holding the runs' directories, and
// no rw on a path the server itself uses (the system folders, its binary,
// the runs' directories). "" or the reason.
std::string Check(std::vector<Mount>* mounts, const std::string& workdir_root,
                  const std::string& self_exe);

// Whether runs of uid:gid (no supplementary groups, as a server started as
// root makes them) can use the host path as the mount says: list and read it
// (ro), and write in it too (rw), by its owner, group and mode bits (ACLs
// aside; its contents unchecked). "" or a warning naming the uid, what it
// cannot do and the fix, for the start log and doctor: otherwise the first
// run to touch it fails with a bare PermissionError.
std::string AccessWarning(const Mount& m, unsigned uid, unsigned gid);

// Back to the text Parse reads (the zygote's argument).
std::string Format(const std::vector<Mount>& mounts);

// "read-only" or "read-write", with ", executable" when exec.
std::string ModeText(const Mount& m);

// Whether `path` is `dir` or lies below it (both normalised, absolute).
bool IsAtOrUnder(const std::string& path, const std::string& dir);

}  // namespace mcpexec::mounts
