// Tasks: the extension io.modelcontextprotocol/tasks (github:
// modelcontextprotocol/ext-tasks, specification/draft/tasks.md). A
// tools/call from a client that declared the extension, still running after
// a while, is answered with a task handle (CreateTaskResult) while its run
// goes on; tasks/get returns the task's status and, once the run ended, the
// exact result the call would have given; tasks/cancel ends the run.
//
// The store is the server's, not a connection's: a task outlives the POST or
// the HTTP session that made it, and is found by its id alone. The id is the
// bearer of the task (128 random bits; there is no tasks/list). A task holds
// its result in memory until MCP_EXEC_RESOURCE_TTL_S after its run ended (so
// that the resource links in the result outlive it no sooner than it does);
// MCP_EXEC_MAX_TASKS bounds how many are held. A result past a few KiB
// waits on disk (TaskResultSpill: the server's resource store), not in the
// supervisor's memory: 32 ended tasks of 26 MiB each had held 830 MiB.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/cancel.h"
#include "base/changes.h"

namespace mcpexec {

inline constexpr char kTasksExtension[] = "io.modelcontextprotocol/tasks";

// tasks/get, tasks/cancel, tasks/update: the extension's methods.
inline bool IsTaskMethod(const std::string& method) {
  return method == "tasks/get" || method == "tasks/cancel" || method == "tasks/update";
}

// Where an ended task's big result waits for tasks/get: out of memory.
class TaskResultSpill {
 public:
  virtual ~TaskResultSpill() = default;
  // Keeps the bytes; the key to load them by, or nullopt when they cannot be
  // kept (the task then holds its result in memory).
  virtual std::optional<std::string> Save(const std::string& bytes) = 0;
  // The bytes kept under key; nullopt when they are gone.
  virtual std::optional<std::string> Load(const std::string& key) = 0;
};

struct TaskOptions {
  std::chrono::milliseconds after{5000};   // a call still running then becomes a task
  int64_t max_tasks = 32;                  // held at once, working or ended; 0: none
  std::chrono::milliseconds keep{900000};  // an ended task is kept that long
  std::chrono::milliseconds run_bound{0};  // the longest a run still goes (for ttlMs)
  std::chrono::milliseconds poll{1000};    // pollIntervalMs
  // Results longer than this (as JSON) go to the spill (SetSpill), when
  // there is one.
  size_t spill_over_bytes = 16384;
};

class TaskStore {
 public:
  using Clock = std::chrono::steady_clock;

  // changes, when given, is notified each time a task's run ends.
  explicit TaskStore(TaskOptions options, Changes* changes = nullptr)
      : options_(options), changes_(changes) {}
  ~TaskStore() { Shutdown(std::chrono::seconds(30)); }
  TaskStore(const TaskStore&) = delete;
  TaskStore& operator=(const TaskStore&) = delete;

  const TaskOptions& options() const { return options_; }
  bool enabled() const { return options_.max_tasks > 0; }
  // Where big results wait from now on (the resource store, once the
  // request path is built); nullptr before the store goes (a result kept
  // there is then reported gone).
  void SetSpill(std::shared_ptr<TaskResultSpill> spill);

  // A task for a call in flight whose run `cancel` ends: its id in *id and
  // its CreateTaskResult (resultType "task", status "working"). nullopt when
  // MCP_EXEC_MAX_TASKS are held or the store is stopping (the call is then
  // answered in place). From then on the store waits for the task's
  // Finish at shutdown.
  std::optional<nlohmann::json> Create(std::shared_ptr<CancelToken> cancel, std::string* id);
  // A working task's progress: its status message.
  void Progress(const std::string& id, const std::string& message);
  // The call's result: the task is "completed", or "cancelled" (the result,
  // the output so far, kept) when tasks/cancel came first.
  void Finish(const std::string& id, nlohmann::json result);

  // tasks/get: the task as the extension's DetailedTask (without
  // resultType); nullopt when no task has that id (never had, or expired).
  std::optional<nlohmann::json> Get(const std::string& id);
  // tasks/cancel: ends the task's run if it is still working, and waits (at
  // most `wait`) for its end, so that the answer comes once the status is
  // "cancelled" and the output so far is its result. A task that had
  // already ended is not cancelled: kEnded, with its status.
  enum class CancelOutcome { kNoSuchTask, kCancelled, kStillEnding, kEnded };
  struct Cancelled {
    CancelOutcome outcome = CancelOutcome::kNoSuchTask;
    std::string status;  // the task's status when the answer goes
  };
  Cancelled Cancel(const std::string& id,
                   std::chrono::milliseconds wait = std::chrono::milliseconds(5000));
  bool Known(const std::string& id);

  // Every working task's run is ended (its result says "shutdown") and
  // waited for (a warning every `wait`); later Creates are refused.
  void Shutdown(std::chrono::milliseconds wait);
  size_t size() const;      // held, expired ones not counted
  int64_t working() const;  // runs still going

 private:
  struct Task {
    std::shared_ptr<CancelToken> cancel;
    std::string status = "working";
    std::string message;
    Clock::time_point created;
    std::chrono::system_clock::time_point created_wall;
    std::chrono::system_clock::time_point updated_wall;
    std::optional<Clock::time_point> ended;
    bool cancel_asked = false;
    nlohmann::json result;
    std::string spilled;  // the spill's key of the result, when it is there
  };
  nlohmann::json DescribeLocked(const std::string& id, const Task& t, Clock::time_point now) const;
  void ExpireLocked(Clock::time_point now);

  const TaskOptions options_;
  Changes* const changes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Task> tasks_;
  int64_t working_ = 0;
  bool stopping_ = false;
  bool full_logged_ = false;
  std::shared_ptr<TaskResultSpill> spill_;
};

}  // namespace mcpexec
