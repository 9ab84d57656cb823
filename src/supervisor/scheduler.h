// Admission and concurrency: at most max_running runs execute at once and at
// most max_queued wait, in arrival order. Admission is decided synchronously
// so that a call past capacity is refused at once, never left hanging.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

namespace mcpexec {

class Scheduler {
 public:
  Scheduler(int64_t max_running, int64_t max_queued);

  // Reserves a place (running or queued). False: at capacity.
  bool Admit();
  // Waits for a running slot, in admission order. Returns false (and gives
  // the place back) if `abandoned` turns true; call Wake() after setting it.
  bool Acquire(const std::function<bool()>& abandoned);
  // Gives a running slot back.
  void Release();
  // Gives back an admitted place that never acquired (e.g. the caller left).
  void Withdraw();
  void Wake();

  int64_t running() const;
  int64_t queued() const;
  int64_t waiting() const;  // callers blocked in Acquire()
  int64_t max_running() const { return max_running_; }
  int64_t max_queued() const { return max_queued_; }

 private:
  const int64_t max_running_, max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t admitted_ = 0, running_ = 0;
  uint64_t next_ticket_ = 0;
  std::deque<uint64_t> waiting_;
};

}  // namespace mcpexec
