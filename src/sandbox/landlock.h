// The Landlock layer (ABI-probed): read and execute only below the folders
// the interpreter needs (the system's, never the host's data), write only in
// the run's own directories; TCP bind/connect denied (ABI 4+); signals and
// abstract unix sockets scoped to the run (ABI 6+). Landlock also keeps
// ptrace-class access (/proc/<pid>/environ, mem, fd) inside the run.
#pragma once

#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace mcpexec::sandbox::landlock {

// 0 when Landlock is unavailable (kernel, LSM list or seccomp of a container).
int ProbeAbi();

struct Rules {
  std::vector<std::string> writable;          // full access below these
  std::vector<std::string> devices;           // read+write of these files (e.g. /dev/null)
  std::vector<std::string> readable = {"/"};  // read and execute below these; nothing else
  std::vector<std::string> listable;          // directories below these may be listed
  // Host folders (MCP_EXEC_MOUNTS): read below each; with write, also make,
  // write, truncate, rename and remove files and folders, but never make
  // devices, fifos, sockets or symlinks; execute only with exec.
  struct Granted {
    std::string path;
    bool write = false, exec = false;
  };
  std::vector<Granted> granted;
};

// Runner, after no_new_privs and before seccomp.
bool Apply(int abi, const Rules& rules, std::string* error);

// The same in two steps, so that the rules known before a run (the system
// folders: many paths) are added ahead of it: Prepare returns the ruleset
// (invalid on failure), AddWritable adds the run's directory, Restrict
// enforces the ruleset and closes it.
UniqueFd Prepare(int abi, const Rules& rules, std::string* error);
bool AddWritable(int abi, int ruleset, const std::string& dir, std::string* error);
bool Restrict(UniqueFd ruleset, std::string* error);

}  // namespace mcpexec::sandbox::landlock
