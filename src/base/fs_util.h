// The few filesystem operations the supervisor needs on run directories:
// private directories made and removed without following symlinks.
#pragma once

#include <optional>
#include <string>

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

}  // namespace mcpexec
