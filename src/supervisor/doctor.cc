#include "supervisor/doctor.h"

#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "base/version.h"
#include "sandbox/layers.h"
#include "sandbox/seccomp_policy.h"
#include "supervisor/zygote_client.h"

namespace mcpexec {

using json = nlohmann::json;

std::string SandboxRefusal(const RuntimeReport& report) {
  auto layers = sandbox::LayersFromJson(report.sandbox.value("layers", json::array()));
  if (layers.empty()) return "the zygote reported no sandbox layers";
  if (const sandbox::LayerStatus* missing = sandbox::MissingRequired(layers)) {
    return "the sandbox layer '" + missing->name + "' cannot be applied on this host (" +
           missing->detail + "; fix: " + missing->fix + ")";
  }
  return "";
}

bool RunsReachServerProcesses(const RuntimeReport& report) {
  if (geteuid() == 0) return false;
  const std::string ns = "," + report.sandbox.value("namespaces", std::string()) + ",";
  if (ns.find(",pid,") != std::string::npos) return false;
  for (const sandbox::LayerStatus& layer :
       sandbox::LayersFromJson(report.sandbox.value("layers", json::array()))) {
    if (layer.name == "landlock" && layer.active) return false;
  }
  return true;
}

namespace {

// The seccomp rules that look at arguments, from the same table the filter
// is built from: what "allowed" means for socket, ioctl, clone, prctl, ...
std::string SeccompArgumentRulesText() {
  std::ostringstream o;
  o << "  seccomp argument rules (the filter is built from these):\n";
  for (const auto& r : sandbox::seccomp_policy::Describe()) {
    if (r.action.rfind("allow if", 0) != 0) continue;
    o << "    " << r.syscall << ": " << r.action << "\n";
  }
  return o.str();
}

json SeccompRulesJson() {
  json rules = json::array();
  for (const auto& r : sandbox::seccomp_policy::Describe()) {
    rules.push_back(
        {{"syscall", r.syscall}, {"action", r.action}, {"why", r.why}, {"group", r.group}});
  }
  return rules;
}

}  // namespace

json LimitsJson(const Config& c) {
  json run = {{"default_timeout_s", c.default_timeout_s},
              {"max_timeout_s", c.max_timeout_s},
              {"max_output_bytes", c.max_output_bytes},
              {"max_concurrent", c.max_concurrent},
              {"max_queue", c.max_queue}};
  const RunLimits limits = RunLimitsOf(c);
  for (const RunLimitField& f : kRunLimitFields) run[f.name] = f.Shown(limits);
  return {{"run", run},
          {"from",
           {{"max_concurrent", c.max_concurrent_from},
            {"memory_limit_mb", c.memory_limit_from},
            {"disk_limit_mb", c.disk_limit_from},
            {"max_py_sessions", c.max_py_sessions_from},
            {"max_processes", c.max_processes_from},
            {"resource_store_mb", c.resource_store_from},
            {"max_tasks", c.max_tasks_from}}},
          {"resource_store",
           {{"max_mb", c.resource_store_mb},
            {"keeps_free_mb", c.resource_store_keep_free_mb},
            {"ttl_s", c.resource_ttl_s}}},
          {"py_session",
           {{"max_live", c.max_py_sessions},
            {"idle_s", c.py_session_idle_s},
            {"max_life_s", c.py_session_max_s},
            {"cpu_budget_s", c.py_session_max_s},
            {"interrupt_grace_ms", c.py_session_interrupt_ms}}}};
}

namespace {

std::string LimitsText(const Config& c) {
  std::ostringstream o;
  o << "  limits per run: timeout " << c.default_timeout_s << " s by default, at most "
    << c.max_timeout_s << " s; ";
  const RunLimits limits = RunLimitsOf(c);
  for (const RunLimitField& f : kRunLimitFields) o << f.Text(limits) << "; ";
  o << c.max_concurrent << " at once, " << c.max_queue << " queued\n";
  o << "  where these came from: " << c.max_concurrent << " at once: " << c.max_concurrent_from
    << "; memory " << c.memory_limit_mb << " MiB: " << c.memory_limit_from << "; disk "
    << c.disk_limit_mb << " MiB: " << c.disk_limit_from << "; " << c.max_py_sessions
    << " Python sessions: " << c.max_py_sessions_from << "; " << c.max_processes
    << " processes: " << c.max_processes_from << "\n";
  o << "  resources (whole streams, big out/ files): at most " << c.resource_store_mb << " MiB ("
    << (c.resource_store_from.empty() ? "MCP_EXEC_RESOURCE_STORE_MB" : c.resource_store_from)
    << "), leaving " << c.resource_store_keep_free_mb << " MiB of " << c.workdir_root
    << "'s filesystem free for the runs, kept " << c.resource_ttl_s << " s\n";
  o << "  Python sessions: at most " << c.max_py_sessions << " live; ended after "
    << c.py_session_idle_s << " s idle or " << c.py_session_max_s
    << " s of life (also its CPU budget); a cell that ignores KeyboardInterrupt for "
    << c.py_session_interrupt_ms
    << " ms is killed with its interpreter; memory, processes and disk hold for a session as a "
       "whole, the timeout per call\n";
  return o.str();
}

}  // namespace

std::string DoctorText(const RuntimeReport& report, const Config& config) {
  std::ostringstream o;
  o << "mcp-exec " << MCP_EXEC_VERSION << " doctor: "
    << (geteuid() == 0 ? "running as root" : "running as uid " + std::to_string(geteuid()))
    << ", zygote namespaces: " << report.sandbox.value("namespaces", "?") << "\n";
  for (const auto& l : sandbox::LayersFromJson(report.sandbox.value("layers", json::array()))) {
    char line[512];
    snprintf(line, sizeof line, "  %-10s %-20s %s%s\n", l.active ? "[active]" : "[inactive]",
             l.name.c_str(), l.detail.c_str(), l.required ? "  (required)" : "");
    o << line;
    if (!l.active && !l.fix.empty()) o << "             fix: " << l.fix << "\n";
  }
  const json mounts = report.sandbox.value("mounts", json::array());
  o << "  host folders (MCP_EXEC_MOUNTS):" << (mounts.empty() ? " none" : "") << "\n";
  for (const json& m : mounts) {
    o << "    " << m.value("path", "") << " ("
      << (m.value("mode", "") == "rw" ? "read-write" : "read-only")
      << (m.value("exec", false) ? ", executable" : "") << ") from " << m.value("host_path", "")
      << ": " << m.value("how", "") << "\n";
  }
  o << SeccompArgumentRulesText();
  o << LimitsText(config);
  o << "  Python " << report.python_version << "; packages:";
  for (auto& [name, version] : report.packages) o << " " << name << " " << version;
  for (auto& name : report.missing) o << " " << name << " (MISSING)";
  if (!report.extras.empty()) o << "; also installed:";
  for (auto& [name, version] : report.extras) o << " " << name << " " << version;
  o << "\n";
  for (const std::string& w : config.warnings) o << "  warning: " << w << "\n";
  std::string refusal = SandboxRefusal(report);
  o << (refusal.empty() ? "verdict: runs code: every required layer holds\n"
                        : "verdict: REFUSES to run code: " + refusal + "\n");
  return o.str();
}

std::string SandboxSummary(const RuntimeReport& report) {
  auto layers = sandbox::LayersFromJson(report.sandbox.value("layers", json::array()));
  auto active = [&](const char* name) {
    for (const auto& l : layers) {
      if (l.name == name) return l.active;
    }
    return false;
  };
  if (!SandboxRefusal(report).empty()) return "";
  std::string s = "Sandbox: no network (sockets other than AF_UNIX are refused), not root";
  if (active("filesystem_readonly") || active("landlock")) {
    s += ", read-only everywhere except the working directory";
    if (active("mount_namespace")) s += " and a private /tmp";
  }
  return s + "; memory, processes, file sizes and open files are limited.";
}

int RunDoctor(const Config& config, bool json_output) {
  ZygoteClient zygote(config);
  std::string error;
  if (!zygote.Start(&error)) {
    if (json_output) {
      printf("%s\n", json({{"ok", false}, {"error", error}}).dump(2).c_str());
    } else {
      printf("mcp-exec doctor: the zygote could not start: %s\n", error.c_str());
    }
    return 1;
  }
  RuntimeReport report = zygote.report();
  zygote.Shutdown();
  std::string refusal = SandboxRefusal(report);
  if (json_output) {
    json pk = json::object();
    for (auto& [name, version] : report.packages) pk[name] = version;
    json out = {{"ok", refusal.empty()},
                {"version", MCP_EXEC_VERSION},
                {"uid", geteuid()},
                {"python", report.python_version},
                {"packages", pk},
                {"missing_packages", report.missing},
                {"namespaces", report.sandbox.value("namespaces", "")},
                {"layers", report.sandbox.value("layers", json::array())},
                {"mounts", report.sandbox.value("mounts", json::array())},
                {"seccomp_rules", SeccompRulesJson()},
                {"limits", LimitsJson(config)},
                {"warnings", config.warnings},
                {"refusal", refusal}};
    printf("%s\n", out.dump(2).c_str());
  } else {
    fputs(DoctorText(report, config).c_str(), stdout);
  }
  return refusal.empty() ? 0 : 1;
}

}  // namespace mcpexec
