#include "protocol/eras.h"

namespace mcpexec::eras {

using json = nlohmann::json;

bool IsLegacyVersion(std::string_view version) {
  for (std::string_view v : kLegacyVersions) {
    if (v == version) return true;
  }
  return false;
}

bool IsStatelessMethod(std::string_view method) {
  for (std::string_view m : kStatelessMethods) {
    if (m == method) return true;
  }
  return false;
}

std::string NegotiateLegacyVersion(const std::string& requested) {
  return std::string(IsLegacyVersion(requested) ? std::string_view(requested)
                                                : kLegacyVersions.front());
}

std::vector<std::string> AllSupportedVersions() {
  std::vector<std::string> all = {kStatelessVersion};
  all.insert(all.end(), kLegacyVersions.begin(), kLegacyVersions.end());
  return all;
}

std::string LegacyVersionList() {
  std::string s;
  for (std::string_view v : kLegacyVersions) s += (s.empty() ? "" : ", ") + std::string(v);
  return s;
}

Era Classify(const json& msg, const std::string* version_header) {
  if (msg.is_object()) {
    auto params = msg.find("params");
    if (params != msg.end() && params->is_object()) {
      auto meta = params->find("_meta");
      if (meta != params->end() && meta->is_object() && meta->contains(kMetaProtocolVersion)) {
        return Era::kStateless;
      }
    }
  }
  // Dates compare as strings: a header of this revision or a later one.
  if (version_header && *version_header >= kStatelessVersion) return Era::kStateless;
  return Era::kLegacy;
}

}  // namespace mcpexec::eras
