#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>

namespace mcpexec::log {
namespace {
std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::mutex g_mu;

const char* Name(Level l) {
  switch (l) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "?";
}

}  // namespace

std::string Iso8601(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  time_t secs = ms / 1000;
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

void SetLevel(const std::string& level) {
  Level l = Level::kInfo;
  if (level == "debug")
    l = Level::kDebug;
  else if (level == "warn")
    l = Level::kWarn;
  else if (level == "error")
    l = Level::kError;
  g_level = static_cast<int>(l);
}

void Write(Level level, const std::string& event, const nlohmann::json& fields) {
  if (static_cast<int>(level) < g_level.load()) return;
  nlohmann::json line = {
      {"ts", Iso8601(std::chrono::system_clock::now())}, {"level", Name(level)}, {"event", event}};
  if (fields.is_object()) {
    for (auto it = fields.begin(); it != fields.end(); ++it) line[it.key()] = it.value();
  }
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(g_mu);
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + off, text.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

}  // namespace mcpexec::log
