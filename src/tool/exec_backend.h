// The exec tool as the sessions see it: admission, execution, results.
#pragma once

#include "supervisor/executor.h"
#include "protocol/mcp_session.h"

namespace mcpexec {

class ExecService : public ToolBackend {
 public:
  ExecService(const Config& config, ZygoteClient& zygote, Scheduler& scheduler, Executor& executor,
              Metrics& metrics, std::string sandbox_summary);
  const Config& config() const override { return config_; }
  nlohmann::json ToolDescriptor() const override;
  bool Admit(std::string* why) override;
  nlohmann::json Execute(const ExecRequest& req, CancelToken& cancel) override;

  // For health and metrics endpoints.
  bool Ready() const;
  Metrics::Gauges Gauges() const;
  Metrics& metrics() { return metrics_; }

 private:
  const Config& config_;
  ZygoteClient& zygote_;
  Scheduler& scheduler_;
  Executor& executor_;
  Metrics& metrics_;
  std::string sandbox_summary_;
};

}  // namespace mcpexec
