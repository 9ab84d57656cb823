#include "ipc/run_bundle.h"

#include <cstdint>

#include "ipc/frame.h"

namespace mcpexec::ipc {

std::string EncodeRunBundle(const std::string& code,
                            const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out;
  AppendField(&out, code);
  AppendU32LE(&out, static_cast<uint32_t>(files.size()));
  for (const auto& [path, data] : files) {
    AppendField(&out, path);
    AppendField(&out, data);
  }
  return out;
}

bool DecodeRunBundle(const std::string& bundle, std::string* code,
                     std::vector<std::pair<std::string, std::string>>* files) {
  size_t pos = 0;
  uint32_t count = 0;
  if (!ReadField(bundle, &pos, code) || !ReadU32(bundle, &pos, &count)) return false;
  files->clear();
  for (uint32_t i = 0; i < count; ++i) {
    std::string path, data;
    if (!ReadField(bundle, &pos, &path) || !ReadField(bundle, &pos, &data)) return false;
    files->emplace_back(std::move(path), std::move(data));
  }
  return pos == bundle.size();
}

}  // namespace mcpexec::ipc
