// The task store's options and spill as the exec tool sets them: from the
// configuration, and big task results kept in the resource store
// (resources/store.h) for as long as the task is.
#pragma once

#include <memory>

#include "model/config.h"
#include "protocol/tasks.h"
#include "resources/store.h"

namespace mcpexec {

// The task store's options from the configuration.
TaskOptions TaskOptionsFor(const Config& config);
// Big task results wait in the resource store (their TTL is the task's);
// nullptr without a store.
std::shared_ptr<TaskResultSpill> TaskSpillTo(ResourceStore* store);

}  // namespace mcpexec
