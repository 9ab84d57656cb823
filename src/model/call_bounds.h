// The longest a call may take, from its admission to its answer: the
// longest timeout a call may ask for (MCP_EXEC_MAX_TIMEOUT_S), then the
// grace of its run's teardown (the kill, the pipes' drain, the files'
// cleanup, a session's cell interrupted). Every part that waits for a call
// reads this one bound: a task's ttlMs counts on it (tool/exec_backend.cc),
// and an HTTP POST still without its answer past it is answered with an
// error instead (transport/http_answer.cc).
#pragma once

#include <chrono>

#include "model/config.h"

namespace mcpexec {

inline constexpr std::chrono::seconds kCallTeardownGrace{60};

inline std::chrono::seconds CallBound(const Config& config) {
  return std::chrono::seconds(config.max_timeout_s) + kCallTeardownGrace;
}

}  // namespace mcpexec
