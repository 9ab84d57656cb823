// `mcp-exec doctor`: starts the zygote exactly as the server would, and
// prints which sandbox layers hold on this host, with the reason and the fix
// for each one that does not. Exit status 0 when the server would run code.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/config.h"
#include "supervisor/run.h"

namespace mcpexec {

int RunDoctor(const Config& config, bool json_output);

// The verdict for a zygote report: "" when every required layer holds, else
// the refusal.
std::string SandboxRefusal(const RuntimeReport& report);
// Whether a run could read the /proc/<pid> entries (environ, fd links) of
// another process of the server's uid: runs keep that uid (the server is not
// root), share its pid namespace and have no Landlock (whose ptrace scoping
// would refuse them).
bool RunsReachServerProcesses(const RuntimeReport& report);
std::string DoctorText(const RuntimeReport& report, const Config& config);
// The limits a run and a Python session get, as doctor and the start log
// state them.
nlohmann::json LimitsJson(const Config& config);
// One sentence for the tool description: what holds, stated only if true.
std::string SandboxSummary(const RuntimeReport& report);

}  // namespace mcpexec
