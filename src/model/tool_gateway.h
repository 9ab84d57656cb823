// What a run's tool channel (supervisor/tool_channel) asks of the other MCP
// servers mcp-exec fronts (upstream/): their catalog and one call. The
// supervisor knows tools only through this; main.cc wires in the upstreams.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

namespace mcpexec {

struct ToolAnswer {
  bool ok = false;
  nlohmann::json value = nullptr;  // ok: what the run gets (structuredContent, text, or the items)
  std::string error;               // !ok: the message of mcp_tools.ToolError, in plain words
  int64_t bytes = 0;               // the size of the upstream's result as it came
};

class ToolGateway {
 public:
  virtual ~ToolGateway() = default;
  // {"NAME": {"tools": [{"name", "description", "inputSchema"[,
  // "outputSchema"]}]}}: the allowed tools of every upstream, under their
  // configured names.
  virtual nlohmann::json Catalog() = 0;
  // One call, checked (allowed, arguments against the input schema) and
  // forwarded, answered by the deadline at the latest; a result of more than
  // max_bytes is refused.
  virtual ToolAnswer Call(const std::string& server, const std::string& tool,
                          const nlohmann::json& arguments,
                          std::chrono::steady_clock::time_point deadline, int64_t max_bytes) = 0;
};

}  // namespace mcpexec
