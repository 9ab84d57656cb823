#include "tool/exec_backend.h"

#include "supervisor/doctor.h"

namespace mcpexec {

using json = nlohmann::json;

ExecService::ExecService(const Config& config, ZygoteClient& zygote, Scheduler& scheduler,
                         Executor& executor, Metrics& metrics, std::string sandbox_summary)
    : config_(config),
      zygote_(zygote),
      scheduler_(scheduler),
      executor_(executor),
      metrics_(metrics),
      sandbox_summary_(std::move(sandbox_summary)) {}

bool ExecService::Ready() const {
  return zygote_.WaitReady(0) && SandboxRefusal(zygote_.report()).empty() &&
         scheduler_.running() + scheduler_.queued() <
             scheduler_.max_running() + scheduler_.max_queued();
}

Metrics::Gauges ExecService::Gauges() const {
  Metrics::Gauges g;
  g.in_flight = scheduler_.running();
  g.queued = scheduler_.waiting();
  g.zygote_restarts = zygote_.restarts();
  return g;
}

json ExecService::ToolDescriptor() const {
  return {
      {"name", ExecToolName()},
      {"title", "Execute Python"},
      {"description", ExecDescription(config_, zygote_.report(), sandbox_summary_)},
      {"inputSchema", ExecInputSchema()},
      {"outputSchema", ExecOutputSchema()},
      {"annotations",
       {{"readOnlyHint", false},
        {"destructiveHint", false},
        {"idempotentHint", false},
        {"openWorldHint", false}}},
  };
}

bool ExecService::Admit(std::string* why) {
  if (scheduler_.Admit()) return true;
  metrics_.RecordRefused();
  *why = "the server is at capacity: " + std::to_string(scheduler_.max_running()) +
         " runs executing and " + std::to_string(scheduler_.max_queued()) +
         " queued (MCP_EXEC_MAX_CONCURRENT, MCP_EXEC_MAX_QUEUE); try again shortly";
  return false;
}

json ExecService::Execute(const ExecRequest& req, CancelToken& cancel) {
  // Fail closed: without its required layers the sandbox runs nothing.
  std::string refusal = SandboxRefusal(zygote_.report());
  if (!refusal.empty()) {
    executor_.Withdraw();
    return ToolError("this server refuses to run code: " + refusal +
                     ". Run `mcp-exec doctor` for details.");
  }
  auto outcome = executor_.Run(req, cancel);
  if (auto* err = std::get_if<std::string>(&outcome)) return ToolError(*err);
  return ToolResult(std::get<ExecResult>(outcome));
}

}  // namespace mcpexec
