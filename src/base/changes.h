// A count of changes others wait on, instead of polling: the owners of
// what a wait is about (a session's calls, the task store's runs, a
// stream's bytes) Notify when it moved, and a waiter sleeps until the count
// passes what it saw, or its deadline. Nothing is lost between a check and
// the wait: take Seen() first, then check, then WaitPast(seen, until).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace mcpexec {

class Changes {
 public:
  using Clock = std::chrono::steady_clock;

  void Notify() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++count_;
    }
    cv_.notify_all();
  }
  uint64_t Seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }
  // True once the count is past `seen`; false at `until` without a change.
  bool WaitPast(uint64_t seen, Clock::time_point until) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, until, [&] { return count_ != seen; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t count_ = 0;
};

}  // namespace mcpexec
