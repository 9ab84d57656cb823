// JSON lines on stderr. Metadata only: callers never pass code, stdin or
// output to these functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mcpexec::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

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
