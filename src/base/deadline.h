// Milliseconds left until a deadline, as poll() takes them: 0 once it
// passed, never more than 2^30.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace mcpexec {

inline int MillisUntil(std::chrono::steady_clock::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, int64_t{1} << 30));
}

}  // namespace mcpexec
