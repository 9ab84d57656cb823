// JSON lines on stderr. Metadata only: callers never pass code, stdin or
// output to these functions.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

namespace mcpexec::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// UTC with milliseconds: 2026-12-03T20:05:00.123Z (the logs' "ts", and the
// timestamps MCP results carry).
std::string Iso8601(std::chrono::system_clock::time_point t);

void SetLevel(const std::string& level);
void Write(Level level, const std::string& event, const nlohmann::json& fields = {});

inline void Debug(const std::string& e, const nlohmann::json& f = {}) {
  Write(Level::kDebug, e, f);
}
inline void Info(const std::string& e, const nlohmann::json& f = {}) { Write(Level::kInfo, e, f); }
inline void Warn(const std::string& e, const nlohmann::json& f = {}) { Write(Level::kWarn, e, f); }
inline void Error(const std::string& e, const nlohmann::json& f = {}) {
  Write(Level::kError, e, f);
}

}  // namespace mcpexec::log
