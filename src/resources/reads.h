// resources/read of what the runs left in the store (resources/store.h):
// the ResourceReader the server reads through once the request path is up.
#pragma once

#include <optional>
#include <string>

#include "resources/resource.h"
#include "resources/store.h"

namespace mcpexec {

// `uri`, or `uri?part=N` (1-based) for a resource read in parts
// (resources/contents.h).
class StoreReader : public ResourceReader {
 public:
  explicit StoreReader(ResourceStore* store) : store_(store) {}
  std::optional<Resource> Read(const std::string& uri) override;

 private:
  ResourceStore* const store_;  // nullptr: nothing to read
};

}  // namespace mcpexec
