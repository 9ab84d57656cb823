// The exec tool bound to the supervisor: validates a call's arguments by the
// contract, admits it, maps it to a run and the run's outcome to the tool's
// result. Also what the transports may know of the server (ServerHealth).
#pragma once

#include <cstdint>
#include <string>

#include "base/metrics.h"
#include "model/config.h"
#include "protocol/health.h"
#include "protocol/mcp_session.h"
#include "supervisor/executor.h"
#include "supervisor/sessions.h"
#include "supervisor/zygote_client.h"
#include "tool/contract.h"

namespace mcpexec {

class ExecBackend : public ToolBackend, public ServerHealth {
 public:
  ExecBackend(const Config& config, ZygoteClient& zygote, Scheduler& scheduler, Executor& executor,
              SessionPool& sessions, Metrics& metrics, std::string sandbox_summary,
              const TaskStore& tasks);

  // Code mode: what the description says of mcp_tools (the upstreams'
  // tools, one line each); set before serving.
  void SetToolsSummary(std::string s) { tools_summary_ = std::move(s); }

  // ToolBackend
  nlohmann::json ToolDescriptor() const override;
  std::string ToolName() const override { return ExecToolName(); }
  std::string Instructions() const override { return ExecInstructions(config_); }
  std::string CacheScope() const override { return ExecCacheScope(config_); }
  std::variant<Work, nlohmann::json> Accept(const nlohmann::json& arguments,
                                            const CallContext& context) override;
  void ConnectionEnded(uint64_t connection) override { sessions_.EndConnection(connection); }
  void ServerStopping() override { sessions_.Stopping(); }

  // ServerHealth
  bool Ready() const override;
  std::string MetricsText(int64_t sessions, int64_t streams) const override;
  void RecordHttpRefused(int status) override { metrics_.RecordHttpRefused(status); }
  void RecordMcpSessionTable(bool evicted) override {
    if (evicted) {
      metrics_.RecordSessionEviction("mcp");
    } else {
      metrics_.RecordSessionRefusal("mcp");
    }
  }

 private:
  nlohmann::json Execute(const ExecRequest& req, CancelToken& cancel, const Progress& progress,
                         SessionPool::Ticket* ticket);

  const Config& config_;
  ZygoteClient& zygote_;
  Scheduler& scheduler_;
  Executor& executor_;
  SessionPool& sessions_;
  Metrics& metrics_;
  std::string sandbox_summary_;
  std::string tools_summary_;  // code mode: mcp_tools and the upstreams' tools
  const TaskStore& tasks_;     // the server's (for the tasks gauge)
};

// The run a validated request asks for, and the tool's result for a run's
// outcome.
RunRequest ToRunRequest(const ExecRequest& req);
ExecResult ToExecResult(RunOutcome outcome);

}  // namespace mcpexec
