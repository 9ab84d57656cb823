// The few filesystem operations the supervisor needs on run directories:
// private directories made and removed without following symlinks.
#pragma once

#include <string>

namespace mcpexec {

// mkdtemp under root; returns "" with errno set on failure.
std::string MakePrivateDir(const std::string& root, const std::string& prefix);

// Removes path and everything below it without following symlinks, also when
// the code left directories without permissions. Returns false if anything
// remains.
bool RemoveTree(const std::string& path);

// Creates the directory (mode 0711) if it is missing.
bool EnsureDir(const std::string& path, unsigned mode);

}  // namespace mcpexec
