// The tool behind the fuzzed sessions (fuzz_mcp_session, fuzz_http): the
// real contract checks every call's arguments and shapes every result, but
// nothing runs. A call's work waits until the harness releases it (the I/O
// it caused has settled) or until it is cancelled, so that the order of
// events is the harness's, not the scheduler's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <variant>

#include "base/metrics.h"
#include "model/config.h"
#include "protocol/health.h"
#include "protocol/mcp_session.h"
#include "tool/contract.h"
#include "tool/exec_backend.h"

namespace mcpexec::fuzz {

class FuzzBackend : public ToolBackend, public ServerHealth {
 public:
  // Calls a connection may have accepted; past it, "at capacity" (a bound
  // on the threads one input can start).
  static constexpr int kMaxCallsPerConnection = 8;

  explicit FuzzBackend(const Config& config) : config_(config) {}

  nlohmann::json ToolDescriptor() const override {
    return {{"name", ExecToolName()},
            {"description", ExecDescription(config_, RuntimeReport{}, "")},
            {"inputSchema", ExecInputSchema()},
            {"outputSchema", ExecOutputSchema()}};
  }
  std::string ToolName() const override { return ExecToolName(); }

  std::variant<Work, nlohmann::json> Accept(const nlohmann::json& arguments,
                                            const CallContext& context) override {
    const uint64_t connection = context.connection;
    auto validated = ValidateExecArguments(arguments, config_);
    if (auto* err = std::get_if<std::string>(&validated)) return ToolError(*err);
    uint64_t epoch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (accepted_[connection]++ >= kMaxCallsPerConnection) {
        return ToolError("the server is at capacity");
      }
      epoch = epoch_;
      ++unfinished_;
    }
    return Work([this, req = std::get<ExecRequest>(std::move(validated)), epoch](
                    CancelToken& cancel, const Progress& progress) {
      WaitForRelease(cancel, epoch);
      if (progress) progress(1, "ran " + std::to_string(req.code.size()) + " bytes");
      RunOutcome o;
      o.stdout_data = req.code;
      o.stderr_data = req.stdin_data;
      for (const auto& [path, data] : req.files) o.files.push_back({"out/" + path, "", data});
      if (cancel.cancelled()) {
        o.exit_code = -1;
        o.end = cancel.reason() == CancelReason::kShutdown ? RunEnd::kShutdown : RunEnd::kCancelled;
      }
      ExecResult r = ToExecResult(std::move(o));
      r.session = req.session;
      r.session_new = req.reset;
      nlohmann::json result = ToolResult(r);
      std::lock_guard<std::mutex> lock(mu_);
      --unfinished_;
      return result;
    });
  }
  void ConnectionEnded(uint64_t connection) override {
    std::lock_guard<std::mutex> lock(mu_);
    accepted_.erase(connection);
  }

  // ServerHealth, with the real metrics text.
  bool Ready() const override { return true; }
  std::string MetricsText(int64_t sessions, int64_t streams) const override {
    Metrics::Gauges g;
    g.sessions = sessions;
    g.streams = streams;
    return metrics_.Render(g);
  }
  void RecordHttpRefused(int status) override { metrics_.RecordHttpRefused(status); }
  void RecordMcpSessionTable(bool evicted) override {
    if (evicted) {
      metrics_.RecordSessionEviction("mcp");
    } else {
      metrics_.RecordSessionRefusal("mcp");
    }
  }

  // The calls accepted so far may end now.
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++epoch_;
    }
    cv_.notify_all();
  }
  // Calls accepted whose work has not returned yet.
  int64_t unfinished() {
    std::lock_guard<std::mutex> lock(mu_);
    return unfinished_;
  }

 private:
  void WaitForRelease(CancelToken& cancel, uint64_t epoch) {
    cancel.OnCancel([this] {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    });
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Every input ends in seconds: a call still waiting this long was lost
      // by its session, which can no longer cancel it (nor end it at
      // shutdown).
      if (!cv_.wait_for(lock, std::chrono::seconds(10),
                        [&] { return epoch_ > epoch || cancel.cancelled(); })) {
        fprintf(stderr, "fuzz: a call was neither released nor cancelled within 10 s\n");
        abort();
      }
    }
    cancel.OnCancel(nullptr);
  }

  const Config& config_;
  Metrics metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t epoch_ = 0;
  int64_t unfinished_ = 0;
  std::map<uint64_t, int> accepted_;
};

}  // namespace mcpexec::fuzz
