// What the exec tool's runs leave behind for the server's sessions (the
// Server, protocol/server.h): the resources its calls hand out, read from
// the resource store (supervisor/resource_store.h), and the task store's
// options and spill for big results.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "model/config.h"
#include "protocol/server.h"
#include "protocol/tasks.h"
#include "supervisor/resource_store.h"

namespace mcpexec {

// resources/read of what the runs left in the store: `uri`, or
// `uri?part=N` (1-based) for a resource read in parts.
class ExecResources : public ResourceReader {
 public:
  explicit ExecResources(ResourceStore* store) : store_(store) {}
  std::optional<Resource> Read(const std::string& uri) override;

 private:
  ResourceStore* const store_;  // nullptr: nothing to read
};

// The task store's options from the configuration.
TaskOptions TaskOptionsFor(const Config& config);
// Big task results wait in the resource store (their TTL is the task's);
// nullptr without a store.
std::shared_ptr<TaskResultSpill> TaskSpillTo(ResourceStore* store);

}  // namespace mcpexec
