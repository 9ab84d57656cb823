#include "tool/task_options.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "model/call_bounds.h"

namespace mcpexec {

namespace {

// A task's result kept in the resource store (its TTL is the task's).
class StoreSpill : public TaskResultSpill {
 public:
  explicit StoreSpill(ResourceStore* store) : store_(store) {}
  std::optional<std::string> Save(const std::string& bytes) override {
    auto w = store_->Begin(static_cast<int64_t>(bytes.size()));
    if (!w || !w->Write(bytes.data(), bytes.size())) return std::nullopt;
    return store_->Commit(*w, "task-result.json", "application/json");
  }
  std::optional<std::string> Load(const std::string& key) override {
    auto opened = store_->Open(key);
    if (!opened) return std::nullopt;
    std::string out;
    if (!ResourceStore::ReadRange(opened->second.get(), 0, opened->first.size, &out))
      return std::nullopt;
    return out;
  }

 private:
  ResourceStore* store_;
};

}  // namespace

TaskOptions TaskOptionsFor(const Config& c) {
  TaskOptions o;
  o.after = std::chrono::seconds(c.task_after_s);
  o.max_tasks = c.max_tasks;
  // A task's result lasts as long as the resources its links name.
  o.keep = std::chrono::seconds(c.resource_ttl_s);
  // The longest a run goes once it started: its timeout, then the kill.
  o.run_bound = CallBound(c);
  return o;
}

std::shared_ptr<TaskResultSpill> TaskSpillTo(ResourceStore* store) {
  return store ? std::make_shared<StoreSpill>(store) : nullptr;
}

}  // namespace mcpexec
