// What the sandbox layers report: each layer is active or not, with the
// reason and the fix, so that `mcp-exec doctor` and the start-up log can say
// exactly what holds on this host.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/run_limits.h"

namespace mcpexec::sandbox {

struct LayerStatus {
  std::string name;
  bool active = false;
  bool required = false;  // without it the server refuses to run code
  std::string detail;     // what is in force, or why not
  std::string fix;        // what the operator can do, when inactive
};

// The limits every run gets (model/run_limits.h).
using RunLimits = mcpexec::RunLimits;

nlohmann::json ToJson(const std::vector<LayerStatus>& layers);
std::vector<LayerStatus> LayersFromJson(const nlohmann::json& j);

// The first required layer that is inactive, or nullptr.
const LayerStatus* MissingRequired(const std::vector<LayerStatus>& layers);

}  // namespace mcpexec::sandbox
