// The few filesystem operations the supervisor needs on run directories:
// private directories made and removed without following symlinks.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace mcpexec {

// What is wrong with `path` as a path below a run's working directory, as a
// phrase ("leaves the working directory (..)"), or nullopt: it must be
// non-empty, relative, at most 1024 bytes, without NUL, and every part
// non-empty, not "." or "..", at most 255 bytes. The one check for the
// caller's input files and the files a run returns.
std::optional<std::string> RelativePathProblem(const std::string& path);

// mkdtemp under root; returns "" with errno set on failure.
std::string MakePrivateDir(const std::string& root, const std::string& prefix);

// Removes path and everything below it without following symlinks, also when
// the code left directories without permissions. Returns false if anything
// remains.
bool RemoveTree(const std::string& path);

// Creates the directory (mode 0711) if it is missing.
bool EnsureDir(const std::string& path, unsigned mode);

// Marks dir as this process's while it lives: creates dir/.lock (0600) and
// takes an exclusive flock on it, kept by *hold (the lock goes with the
// process, SIGKILL included). False with errno on failure.
bool HoldDir(const std::string& dir, UniqueFd* hold);

// What servers killed without a chance to clean up (SIGKILL, OOM) left in
// root: every folder named prefix + 6 letters or digits (mkdtemp's) that
// has a .lock nobody holds and was last changed min_age or longer ago is
// removed. A folder without .lock (a server that does not take one) is
// never touched; the age leaves a folder being made alone. Returns the
// folders removed.
std::vector<std::string> SweepUnheldDirs(const std::string& root,
                                         const std::vector<std::string>& prefixes,
                                         std::chrono::seconds min_age);

}  // namespace mcpexec
