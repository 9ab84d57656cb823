#include "protocol/tasks.h"

#include <algorithm>

#include "base/log.h"
#include "base/random.h"

namespace mcpexec {

using json = nlohmann::json;

namespace {

int64_t Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

std::optional<json> TaskStore::Create(std::shared_ptr<CancelToken> cancel, std::string* id) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(now);
  if (stopping_ || !enabled() || static_cast<int64_t>(tasks_.size()) >= options_.max_tasks) {
    // Once per spell of fullness, not once per call.
    if (!stopping_ && enabled() && !full_logged_) {
      log::Warn("tasks_full", {{"max_tasks", options_.max_tasks}});
      full_logged_ = true;
    }
    return std::nullopt;
  }
  full_logged_ = false;
  // 128 random bits, like the resource URIs and the session handles.
  *id = RandomToken(16);
  Task t;
  t.cancel = std::move(cancel);
  t.created = now;
  t.created_wall = t.updated_wall = std::chrono::system_clock::now();
  t.message = "the call is still running after " + std::to_string(options_.after.count() / 1000) +
              " s; poll tasks/get for its result";
  auto [it, inserted] = tasks_.emplace(*id, std::move(t));
  ++working_;
  log::Info("task_created", {{"tasks", tasks_.size()}});
  json created = DescribeLocked(it->first, it->second, now);
  created["resultType"] = "task";
  return created;
}

void TaskStore::Progress(const std::string& id, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.ended) return;
  it->second.message = message;
  it->second.updated_wall = std::chrono::system_clock::now();
}

void TaskStore::Finish(const std::string& id, json result) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.ended) return;
  Task& t = it->second;
  t.ended = Clock::now();
  t.updated_wall = std::chrono::system_clock::now();
  const bool tool_error = result.is_object() && result.value("isError", false);
  const bool cut = t.cancel->cancelled();
  if (t.cancel_asked || (cut && t.cancel->reason() == CancelReason::kClient)) {
    t.status = "cancelled";
    t.message = "cancelled; the output so far is in result";
  } else if (cut) {
    t.status = "completed";
    t.message = "ended by the server's shutdown; the output so far is in result";
  } else {
    t.status = "completed";
    t.message = tool_error ? "the call ended with a tool error; it is in result"
                           : "the call finished; its result is in result";
  }
  if (spill_) {
    std::string text = result.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > options_.spill_over_bytes) {
      if (auto key = spill_->Save(text)) {
        t.spilled = std::move(*key);
        result = nullptr;
      }
    }
  }
  t.result = std::move(result);
  --working_;
  log::Info("task_ended", {{"status", t.status}, {"seconds", Ms(*t.ended - t.created) / 1000.0}});
  // Under the lock: Shutdown's wait may end the store as soon as it wakes.
  cv_.notify_all();
  if (changes_) changes_->Notify();
}

void TaskStore::SetSpill(std::shared_ptr<TaskResultSpill> spill) {
  std::lock_guard<std::mutex> lock(mu_);
  spill_ = std::move(spill);
}

json TaskStore::DescribeLocked(const std::string& id, const Task& t, Clock::time_point now) const {
  // Until its run ends a task lasts at least as long as the run may still
  // go, then `keep`; once ended, exactly `keep` after the end.
  const int64_t ttl =
      t.ended ? Ms(*t.ended - t.created) + options_.keep.count()
              : Ms(now - t.created) + options_.run_bound.count() + options_.keep.count();
  json task = {
      {"taskId", id},
      {"status", t.status},
      {"statusMessage", t.message},
      {"createdAt", log::Iso8601(t.created_wall)},
      {"lastUpdatedAt", log::Iso8601(t.updated_wall)},
      {"ttlMs", ttl},
      {"pollIntervalMs", options_.poll.count()},
  };
  // A cancelled task keeps what its run printed until the cancel took it.
  if (t.ended && t.spilled.empty()) task["result"] = t.result;
  if (t.ended && !t.spilled.empty()) {
    std::optional<std::string> text = spill_ ? spill_->Load(t.spilled) : std::nullopt;
    json result = text ? json::parse(*text, nullptr, false) : json();
    if (!text || result.is_discarded()) {
      result = {{"content",
                 {{{"type", "text"},
                   {"text",
                    "this task's result was kept on disk and is gone (the resource store made "
                    "room for newer resources, MCP_EXEC_RESOURCE_STORE_MB); run the call again"}}}},
                {"isError", true}};
    }
    task["result"] = std::move(result);
  }
  return task;
}

void TaskStore::ExpireLocked(Clock::time_point now) {
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    if (it->second.ended && now - *it->second.ended >= options_.keep) {
      it = tasks_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<json> TaskStore::Get(const std::string& id) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(now);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return std::nullopt;
  return DescribeLocked(it->first, it->second, now);
}

TaskStore::Cancelled TaskStore::Cancel(const std::string& id, std::chrono::milliseconds wait) {
  Cancelled out;
  std::shared_ptr<CancelToken> token;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ExpireLocked(Clock::now());
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return out;
    out.status = it->second.status;
    if (it->second.ended) {
      out.outcome = CancelOutcome::kEnded;  // nothing left to end
      return out;
    }
    it->second.cancel_asked = true;
    it->second.message = "cancelling: the run is being ended";
    it->second.updated_wall = std::chrono::system_clock::now();
    token = it->second.cancel;
  }
  log::Info("task_cancel", {});
  token->Cancel(CancelReason::kClient);
  // The run ends within a moment of its kill (Finish wakes this): the
  // answer then comes with the status changed.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, wait, [&] {
    auto it = tasks_.find(id);
    return it == tasks_.end() || it->second.ended;
  });
  auto it = tasks_.find(id);
  const bool ended = it != tasks_.end() && it->second.ended;
  out.outcome = ended ? CancelOutcome::kCancelled : CancelOutcome::kStillEnding;
  out.status = it != tasks_.end() ? it->second.status : "cancelled";
  return out;
}

bool TaskStore::Known(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(Clock::now());
  return tasks_.count(id) > 0;
}

int64_t TaskStore::working() const {
  std::lock_guard<std::mutex> lock(mu_);
  return working_;
}

size_t TaskStore::size() const {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count_if(tasks_.begin(), tasks_.end(), [&](const auto& kv) {
    return !kv.second.ended || now - *kv.second.ended < options_.keep;
  }));
}

void TaskStore::Shutdown(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  for (auto& [id, t] : tasks_) {
    if (!t.ended) t.cancel->Cancel(CancelReason::kShutdown);
  }
  // Cancelled runs end within the executor's own bounds (kill grace, pipe
  // grace); a task's thread may not outlive the store, so this does not
  // give up.
  while (!cv_.wait_for(lock, wait, [&] { return working_ == 0; })) {
    log::Warn("tasks_still_running", {{"working", working_}});
  }
}

}  // namespace mcpexec
