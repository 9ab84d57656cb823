// What the transports serve while the zygote warms up (about a second: it
// imports the pre-warmed packages). The handshake and what needs only the
// configuration are answered at once: initialize, server/discover, ping,
// the tool's name and instructions, /healthz. What needs the warm runtime
// waits for it: tools/list (the description names the Python and package
// versions and the sandbox's layers), calls, /readyz (503 until then). A
// call that arrives early waits on its own thread, so the connection keeps
// being read (a cancel ends the wait). Once the request path is built the
// gate only forwards to it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>

#include "base/metrics.h"
#include "model/config.h"
#include "protocol/health.h"
#include "protocol/mcp_session.h"

namespace mcpexec {

class WarmUpGate : public ToolBackend, public ServerHealth {
 public:
  WarmUpGate(const Config& config, Metrics& metrics) : config_(config), metrics_(metrics) {}

  // The request path is up: from now on everything goes to it. `tools` and
  // `health` outlive the transports.
  void Open(ToolBackend& tools, ServerHealth& health);
  // The start failed (why: the reason, said in plain words) or the server
  // is stopping before it ended: calls waiting for it are answered with a
  // tool error saying so, and later ones at once.
  void Fail(const std::string& why);

  // ToolBackend
  nlohmann::json ToolDescriptor() const override;
  std::string ToolName() const override;
  std::string Instructions() const override;
  std::string CacheScope() const override;
  std::variant<Work, nlohmann::json> Accept(const nlohmann::json& arguments,
                                            const CallContext& context) override;
  void ConnectionEnded(uint64_t connection) override;
  void ServerStopping() override;

  // ServerHealth
  bool Ready() const override;
  std::string MetricsText(int64_t sessions, int64_t streams) const override;
  void RecordHttpRefused(int status) override { metrics_.RecordHttpRefused(status); }
  void RecordMcpSessionTable(bool evicted) override;

 private:
  // The path once open, else nullptr (then *why says why it never will be,
  // or is empty while it still may).
  ToolBackend* Tools(std::string* why = nullptr) const;
  // A call that came early: waits until the path is open and the call's
  // turn has come (or the start failed, or the call was cancelled), then
  // hands it to the path.
  nlohmann::json AcceptLate(uint64_t number, const nlohmann::json& arguments,
                            const CallContext& context, CancelToken& cancel,
                            const Progress& progress);
  void PassTurnLocked(uint64_t number);

  const Config& config_;
  Metrics& metrics_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  ToolBackend* tools_ = nullptr;
  ServerHealth* health_ = nullptr;
  std::string failed_;  // why the path will never open
  // Calls that came early reach the path in the order they came (calls to
  // one session run in that order): each has a number, and goes when its
  // number's turn comes; one that gave up waiting leaves its number in left_.
  uint64_t next_early_ = 0;
  uint64_t turn_ = 0;
  std::set<uint64_t> left_;
};

}  // namespace mcpexec
