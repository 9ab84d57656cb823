#include "supervisor/scheduler.h"

#include <algorithm>
#include <cstdint>

namespace mcpexec {

Scheduler::Scheduler(int64_t max_running, int64_t max_queued)
    : max_running_(max_running), max_queued_(max_queued) {}

bool Scheduler::Admit() {
  std::lock_guard<std::mutex> lock(mu_);
  if (admitted_ >= max_running_ + max_queued_) return false;
  ++admitted_;
  return true;
}

bool Scheduler::Acquire(const std::function<bool()>& abandoned) {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t me = next_ticket_++;
  waiting_.push_back(me);
  for (;;) {
    if (abandoned()) {
      waiting_.erase(std::find(waiting_.begin(), waiting_.end(), me));
      --admitted_;
      cv_.notify_all();
      return false;
    }
    if (running_ < max_running_ && waiting_.front() == me) break;
    cv_.wait(lock);
  }
  waiting_.pop_front();
  ++running_;
  cv_.notify_all();
  return true;
}

void Scheduler::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  --running_;
  --admitted_;
  cv_.notify_all();
}

void Scheduler::Withdraw() {
  std::lock_guard<std::mutex> lock(mu_);
  --admitted_;
  cv_.notify_all();
}

void Scheduler::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

int64_t Scheduler::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

int64_t Scheduler::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(waiting_.size());
}

int64_t Scheduler::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return admitted_ - running_;
}

}  // namespace mcpexec
