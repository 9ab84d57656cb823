#include "supervisor/run.h"

namespace mcpexec {

const std::vector<RunEnd>& AbnormalRunEnds() {
  static const std::vector<RunEnd> kEnds = {
      RunEnd::kTimeout, RunEnd::kMemory,    RunEnd::kCpu,      RunEnd::kFileSize, RunEnd::kSeccomp,
      RunEnd::kSignal,  RunEnd::kCancelled, RunEnd::kShutdown, RunEnd::kProcesses};
  return kEnds;
}

const char* RunEndName(RunEnd end) {
  switch (end) {
    case RunEnd::kExited:
      return "";
    case RunEnd::kTimeout:
      return "timeout";
    case RunEnd::kCancelled:
      return "cancelled";
    case RunEnd::kShutdown:
      return "shutdown";
    case RunEnd::kMemory:
      return "memory";
    case RunEnd::kCpu:
      return "cpu";
    case RunEnd::kFileSize:
      return "file_size";
    case RunEnd::kSeccomp:
      return "seccomp";
    case RunEnd::kSignal:
      return "signal";
    case RunEnd::kProcesses:
      return "processes";
  }
  return "signal";
}

const std::vector<RunFailure>& RunFailures() {
  static const std::vector<RunFailure> kAll = {
      RunFailure::kAtCapacity,         RunFailure::kPySessionsFull, RunFailure::kLayersMissing,
      RunFailure::kCancelled,          RunFailure::kShutdown,       RunFailure::kInternal,
      RunFailure::kSandboxUnavailable, RunFailure::kStartFailed,    RunFailure::kLockdownRefused,
      RunFailure::kSandboxLost,        RunFailure::kSandboxStuck};
  return kAll;
}

const char* RunFailureName(RunFailure f) {
  switch (f) {
    case RunFailure::kAtCapacity:
      return "at_capacity";
    case RunFailure::kPySessionsFull:
      return "py_sessions_full";
    case RunFailure::kLayersMissing:
      return "layers_missing";
    case RunFailure::kCancelled:
      return "cancelled";
    case RunFailure::kShutdown:
      return "shutdown";
    case RunFailure::kInternal:
      return "internal";
    case RunFailure::kSandboxUnavailable:
      return "sandbox_unavailable";
    case RunFailure::kStartFailed:
      return "start_failed";
    case RunFailure::kLockdownRefused:
      return "lockdown_refused";
    case RunFailure::kSandboxLost:
      return "sandbox_lost";
    case RunFailure::kSandboxStuck:
      return "sandbox_stuck";
  }
  return "internal";
}

RuntimeReport ParseRuntimeReport(const nlohmann::json& j) {
  RuntimeReport r;
  r.python_version = j.value("python", "");
  r.sandbox = j.value("sandbox", nlohmann::json::object());
  r.image = j.value("image", nlohmann::json::object());
  auto pairs = [&j](const char* key, std::vector<std::pair<std::string, std::string>>* out) {
    for (const auto& p : j.value(key, nlohmann::json::array())) {
      if (p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_string()) {
        out->emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
      }
    }
  };
  pairs("preloaded", &r.preloaded);
  pairs("extras", &r.extras);
  const nlohmann::json packages = j.value("packages", nlohmann::json::object());
  // The runtime names its promised packages in order (a JSON object's keys
  // come back sorted), so the package list lives in the runtime alone.
  const nlohmann::json order = j.value("package_order", nlohmann::json::array());
  if (!packages.is_object() || !order.is_array()) return r;
  for (const auto& name_json : order) {
    if (!name_json.is_string()) continue;
    std::string name = name_json.get<std::string>();
    const nlohmann::json p = packages.value(name, nlohmann::json::object());
    if (p.is_object() && p.value("available", false)) {
      r.packages.emplace_back(name, p.value("version", "unknown"));
    } else {
      r.missing.push_back(name);
    }
  }
  return r;
}

}  // namespace mcpexec
