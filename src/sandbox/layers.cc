#include "sandbox/layers.h"

namespace mcpexec::sandbox {

nlohmann::json ToJson(const std::vector<LayerStatus>& layers) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : layers) {
    out.push_back({{"name", l.name},
                   {"active", l.active},
                   {"required", l.required},
                   {"detail", l.detail},
                   {"fix", l.fix}});
  }
  return out;
}

std::vector<LayerStatus> LayersFromJson(const nlohmann::json& j) {
  std::vector<LayerStatus> out;
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    LayerStatus l;
    l.name = e.value("name", "");
    l.active = e.value("active", false);
    l.required = e.value("required", false);
    l.detail = e.value("detail", "");
    l.fix = e.value("fix", "");
    out.push_back(l);
  }
  return out;
}

const LayerStatus* MissingRequired(const std::vector<LayerStatus>& layers) {
  for (const auto& l : layers) {
    if (l.required && !l.active) return &l;
  }
  return nullptr;
}

}  // namespace mcpexec::sandbox
