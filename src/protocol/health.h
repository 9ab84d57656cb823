// What a transport may learn about the server besides MCP: whether it can
// take calls, and its metrics. Implemented by the tool's backend, so that
// transports see the protocol and nothing below it.
#pragma once

#include <cstdint>
#include <string>

namespace mcpexec {

class ServerHealth {
 public:
  virtual ~ServerHealth() = default;
  // The sandbox is up and there is room for another call.
  virtual bool Ready() const = 0;
  // /metrics in the Prometheus text format; sessions and streams are the
  // transport's own gauges.
  virtual std::string MetricsText(int64_t sessions, int64_t streams) const = 0;
  // An HTTP request answered with an error status before it reached MCP.
  virtual void RecordHttpRefused(int status) = 0;
  // The MCP session table, full, ended an idle session to make room for a
  // new one (evicted) or refused it (none was idle).
  virtual void RecordMcpSessionTable(bool evicted) = 0;
};

}  // namespace mcpexec
