// What every session of the server shares besides the tool: the task store
// (a task outlives the connection that made it) and the resources the
// calls hand out (resource_links, read by any client holding the URI). One
// per server, made in main before the transports, outliving every session;
// the transports hand it to each McpSession. The tool (ToolBackend) keeps
// only the tool's concerns.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <shared_mutex>
#include <string>

#include "base/changes.h"
#include "protocol/tasks.h"
#include "resources/resource.h"

namespace mcpexec {

class ToolBackend;

class Server {
 public:
  // tasks: the store's options (max_tasks 0: calls are always answered in
  // place, and the extension is not offered).
  Server(ToolBackend& tool, TaskOptions tasks) : tool_(tool), tasks_(tasks, &changes_) {}
  // No tasks and no resources (unit tests, the fuzz targets).
  explicit Server(ToolBackend& tool) : Server(tool, NoTasks()) {}
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  ToolBackend& tool() const { return tool_; }
  TaskStore& tasks() { return tasks_; }
  // Notified when a call of any session ends, a task's run ends, or a
  // transport's stream flushed or closed: what a drain waits on.
  Changes& changes() { return changes_; }
  bool TasksEnabled() const { return tasks_.enabled(); }

  // Where resources are read from, once the request path that makes them
  // is built; nullptr before it is torn down (a read in flight finishes
  // first). Until then no call has handed out a link: every read is
  // "not found".
  void SetResources(std::shared_ptr<ResourceReader> reader);
  std::optional<Resource> ReadResource(const std::string& uri);

 private:
  static TaskOptions NoTasks() {
    TaskOptions o;
    o.max_tasks = 0;
    return o;
  }

  ToolBackend& tool_;
  Changes changes_;  // before tasks_, which notifies it
  TaskStore tasks_;
  std::shared_mutex resources_mu_;
  std::shared_ptr<ResourceReader> resources_;
};

}  // namespace mcpexec
