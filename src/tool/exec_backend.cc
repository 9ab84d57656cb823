#include "tool/exec_backend.h"

#include <cstdint>

#include "base/log.h"
#include "supervisor/doctor.h"
#include "supervisor/session_handles.h"

namespace mcpexec {

using json = nlohmann::json;

ExecBackend::ExecBackend(const Config& config, ZygoteClient& zygote, Scheduler& scheduler,
                         Executor& executor, SessionPool& sessions, Metrics& metrics,
                         std::string sandbox_summary, const TaskStore& tasks)
    : config_(config),
      zygote_(zygote),
      scheduler_(scheduler),
      executor_(executor),
      sessions_(sessions),
      metrics_(metrics),
      sandbox_summary_(std::move(sandbox_summary)),
      tasks_(tasks) {}

bool ExecBackend::Ready() const {
  return zygote_.WaitReady(0) && SandboxRefusal(zygote_.report()).empty() &&
         scheduler_.running() + scheduler_.queued() <
             scheduler_.max_running() + scheduler_.max_queued();
}

std::string ExecBackend::MetricsText(int64_t sessions, int64_t streams) const {
  Metrics::Gauges g;
  g.in_flight = scheduler_.running();
  g.queued = scheduler_.waiting();
  g.zygote_restarts = zygote_.restarts();
  g.sessions = sessions;
  g.streams = streams;
  g.py_sessions = sessions_.live();
  g.tasks = static_cast<int64_t>(tasks_.size());
  return metrics_.Render(g);
}

json ExecBackend::ToolDescriptor() const {
  return {
      {"name", ExecToolName()},
      {"title", "Execute Python"},
      {"description",
       ExecDescription(config_, zygote_.report(), sandbox_summary_) + tools_summary_},
      {"inputSchema", ExecInputSchema()},
      {"outputSchema", ExecOutputSchema()},
      {"annotations",
       {{"readOnlyHint", false},
        {"destructiveHint", false},
        {"idempotentHint", false},
        {"openWorldHint", false}}},
  };
}

std::variant<ToolBackend::Work, json> ExecBackend::Accept(const json& arguments,
                                                          const CallContext& context) {
  auto validated = ValidateExecArguments(arguments, config_);
  if (auto* err = std::get_if<std::string>(&validated)) return ToolError(*err);
  if (!scheduler_.Admit()) {
    metrics_.RecordFailure(RunFailureName(RunFailure::kAtCapacity));
    log::Warn("at_capacity", {});
    return ToolError("the server is at capacity: " + std::to_string(scheduler_.max_running()) +
                     " runs executing and " + std::to_string(scheduler_.max_queued()) +
                     " queued (MCP_EXEC_MAX_CONCURRENT, MCP_EXEC_MAX_QUEUE); try again shortly");
  }
  ExecRequest req = std::get<ExecRequest>(std::move(validated));
  // A session call takes its place in the session's line now, so calls to
  // one session run in the order they arrived.
  std::shared_ptr<SessionPool::Ticket> ticket;
  if (!req.session.empty()) {
    SessionPool::Reservation r = sessions_.Reserve(
        {context.connection, context.stateless, req.session, context.peer + " " + context.client});
    if (!r.ticket) {
      executor_.Withdraw();
      if (r.full) {
        metrics_.RecordFailure(RunFailureName(RunFailure::kPySessionsFull));
        log::Warn("py_sessions_full", {{"max_py_sessions", config_.max_py_sessions}});
      }
      return ToolError(r.error);
    }
    ticket = std::move(r.ticket);
  }
  return Work([this, req = std::move(req), ticket = std::move(ticket)](CancelToken& cancel,
                                                                       const Progress& progress) {
    return Execute(req, cancel, progress, ticket.get());
  });
}

json ExecBackend::Execute(const ExecRequest& req, CancelToken& cancel, const Progress& progress,
                          SessionPool::Ticket* ticket) {
  // Fail closed: without its required layers the sandbox runs nothing.
  std::string refusal = SandboxRefusal(zygote_.report());
  if (!refusal.empty()) {
    executor_.Withdraw();
    metrics_.RecordFailure(RunFailureName(RunFailure::kLayersMissing));
    log::Warn("layers_missing", {{"why", refusal}});
    return ToolError("this server refuses to run code: " + refusal +
                     ". Run `mcp-exec doctor` for details.");
  }
  if (!ticket) {
    auto outcome = executor_.Run(ToRunRequest(req), cancel, progress);
    if (auto* err = std::get_if<std::string>(&outcome)) return ToolError(*err);
    ExecResult r = ToExecResult(std::get<RunOutcome>(std::move(outcome)));
    r.output_cap = config_.max_output_bytes;
    r.text_output_bytes = config_.text_output_bytes;
    r.timeout_note = req.timeout_note;
    return ToolResult(r);
  }
  SessionPool::CellOutcome cell =
      sessions_.Run(*ticket, req.reset, req.end, ToRunRequest(req), cancel, progress);
  const std::string& name = SessionPool::NameOf(*ticket);  // the handle "new" minted
  if (auto* err = std::get_if<std::string>(&cell.result)) {
    std::string message = "session \"" + name + "\": " + *err;
    if (!cell.ended.empty()) {
      message += " (the session ended: " + cell.ended +
                 (HandleBook::LooksLikeHandle(name) ? ")" : "; the next call starts a new one)");
    }
    return ToolError(message);
  }
  ExecResult r = ToExecResult(std::get<RunOutcome>(std::move(cell.result)));
  r.output_cap = config_.max_output_bytes;
  r.text_output_bytes = config_.text_output_bytes;
  r.timeout_note = req.timeout_note;
  r.session = name;
  r.session_new = cell.is_new;
  r.session_ended = cell.ended;
  r.session_restarted = cell.restarted;
  return ToolResult(r);
}

RunRequest ToRunRequest(const ExecRequest& req) {
  return RunRequest{req.code, req.stdin_data, req.timeout_s, req.files};
}

ExecResult ToExecResult(RunOutcome o) {
  ExecResult r;
  static_cast<RunOutcome&>(r) = std::move(o);
  r.timed_out = r.end == RunEnd::kTimeout;
  r.reason = RunEndName(r.end);
  return r;
}

}  // namespace mcpexec
