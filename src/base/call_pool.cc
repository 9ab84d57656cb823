#include "base/call_pool.h"

#include <system_error>
#include <utility>

namespace mcpexec {

CallPool::~CallPool() { Join(); }

bool CallPool::Start(std::function<void()> job) {
  JoinFinished();
  std::lock_guard<std::mutex> lock(mu_);
  auto self = running_.emplace(running_.end());
  try {
    // The thread's handle is in place before the thread can look for it:
    // its end takes mu_, held until then.
    *self = std::thread([this, self, job = std::move(job)]() mutable {
      job();
      job = nullptr;  // what it holds goes before the pool hears it ended
      std::lock_guard<std::mutex> l(mu_);
      finished_.push_back(std::move(*self));
      running_.erase(self);
      if (--jobs_ == 0) idle_cv_.notify_all();
    });
  } catch (const std::system_error&) {
    // No thread (EAGAIN: the process limit, which runs share with the
    // server where they keep its uid): the job is not run, and says so.
    running_.erase(self);
    return false;
  }
  ++jobs_;
  return true;
}

bool CallPool::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return jobs_ == 0; });
}

void CallPool::Join() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [&] { return jobs_ == 0; });
  }
  // No job runs, so none can start another: what has finished is all.
  JoinFinished();
}

int64_t CallPool::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_;
}

void CallPool::JoinFinished() {
  std::vector<std::thread> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(finished_);
  }
  for (std::thread& t : done) t.join();
}

}  // namespace mcpexec
