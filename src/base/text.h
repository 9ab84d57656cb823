// The one way the server reads a number, or a list, from text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mcpexec {

// Strict: 1-18 decimal digits, no sign, no spaces, no fraction. What every
// number the server reads from text (variables, flags, the zygote's
// arguments, cgroup and /proc files, a resource's part) must look like.
bool ParseDecimal(const std::string& text, int64_t* out);

// The items of a comma-separated list, trimmed, empty ones dropped
// (MCP_EXEC_PRELOAD's modules, /proc's and cgroups' lists).
std::vector<std::string> SplitComma(const std::string& text);

}  // namespace mcpexec
