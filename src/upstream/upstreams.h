// The upstream MCP servers of code mode, as a ToolGateway: started and
// listed at start, their allowed tools the catalog runs see, every call
// checked (allowed, arguments against the tool's input schema, result size)
// before and after it is forwarded.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/metrics.h"
#include "model/tool_gateway.h"
#include "upstream/client.h"

namespace mcpexec::upstream {

class Upstreams : public ToolGateway {
 public:
  Upstreams(std::vector<Spec> specs, Metrics* metrics);
  ~Upstreams() override;
  // Starts and lists every upstream (each within timeout); on failure,
  // *error names the upstream and what failed.
  bool Start(std::chrono::seconds timeout, std::string* error);

  // The allowed tools with their schemas; a server that said its tool
  // list changed is listed again first.
  nlohmann::json Catalog() override;
  ToolAnswer Call(const std::string& server, const std::string& tool,
                  const nlohmann::json& arguments, Clock::time_point deadline,
                  int64_t max_bytes) override;

  // One line per upstream for the exec tool's description:
  // "NAME (N tools): a, b, c"; past max_tools tools in all, "NAME (N
  // tools)" and how to find one.
  std::string Summary(int64_t max_tools) const;
  // Shutdown: every call in flight ends now (stdio servers are killed).
  void Abort();
  // For the start log: name, transport, era, tools listed and allowed.
  nlohmann::json Report() const;

 public:
  struct Tool;
  using Tools = std::vector<Tool>;

 private:
  struct Server;
  static constexpr std::chrono::seconds kRelistTimeout{5};
  static constexpr std::chrono::seconds kRelistBackoff{30};
  static const Tool* Find(const Tools& tools, const std::string& tool);
  static std::shared_ptr<const Tools> AllowedTools(const Spec& spec, const nlohmann::json& listed);
  void RefreshChanged();

  Metrics* metrics_;
  std::vector<std::unique_ptr<Server>> servers_;
};

// What a CallToolResult gives the run: its structuredContent when there is
// one, else its text items joined when it has only text, else its items.
nlohmann::json ValueOf(const nlohmann::json& r);
// The text of an error result (isError), for ToolError.
std::string ErrorTextOf(const nlohmann::json& r);

}  // namespace mcpexec::upstream
