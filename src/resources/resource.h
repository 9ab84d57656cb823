// A resource as resources/read serves it, and the interface the protocol's
// Server reads resources through (the store's reader, resources/reads.h, is
// the one the server has).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mcpexec {

// resources/read of a resource a call handed out: its contents items, how
// long it may still be cached (ms), and the result's _meta (an object; may
// be empty).
struct Resource {
  nlohmann::json contents;
  int64_t ttl_ms = 0;
  nlohmann::json meta;
};

class ResourceReader {
 public:
  virtual ~ResourceReader() = default;
  // nullopt when the URI names nothing (never did, or expired).
  virtual std::optional<Resource> Read(const std::string& uri) = 0;
};

}  // namespace mcpexec
