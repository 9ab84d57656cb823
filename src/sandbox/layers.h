// What the sandbox layers report: each layer is active or not, with the
// reason and the fix, so that `mcp-exec doctor` and the start-up log can say
// exactly what holds on this host.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mcpexec::sandbox {

struct LayerStatus {
  std::string name;
  bool active = false;
  bool required = false;  // without it the server refuses to run code
  std::string detail;     // what is in force, or why not
  std::string fix;        // what the operator can do, when inactive
};

// The limits every run gets. The configurable ones come from the server's
// config (base/config.h holds their defaults) through ZygoteArgs; the rest
// are fixed here.
struct RunLimits {
  int64_t memory_bytes = 0;
  int64_t disk_bytes = 0;              // workdir size / largest file
  int64_t scratch_bytes = 64ll << 20;  // private /tmp and /dev/shm each
  int64_t max_processes = 0;
  int64_t max_open_files = 0;
  uint32_t sandbox_uid = 65532;
  uint32_t sandbox_gid = 65532;
};

nlohmann::json ToJson(const std::vector<LayerStatus>& layers);
std::vector<LayerStatus> LayersFromJson(const nlohmann::json& j);

// The first required layer that is inactive, or nullptr.
const LayerStatus* MissingRequired(const std::vector<LayerStatus>& layers);

}  // namespace mcpexec::sandbox
