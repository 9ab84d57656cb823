// The threads of the work that blocks for as long as a run lasts: a call's
// run, a task's, a run's tool channel. Made once (main), it owns every such
// thread: each job gets a thread of its own (work here waits on runs, not on
// the CPU, so a fixed number of threads would only queue calls behind
// others' runs) and that thread is joined, by the next Start or by Join,
// once its job has returned. No thread is left behind: shutdown is
// WaitIdle (bounded, to say what is late) and then Join.
//
// A finished thread holds no process slot (the kernel reaps an exited thread
// at once), only its stack until it is joined; the pool joins what has
// finished on every Start, so finished threads never pile up.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace mcpexec {

class CallPool {
 public:
  CallPool() = default;
  // Joins every thread: waits for every job, however long it takes (the
  // owner bounds its jobs: cancel them, then WaitIdle, before this).
  ~CallPool();
  CallPool(const CallPool&) = delete;
  CallPool& operator=(const CallPool&) = delete;

  // Runs `job` on a thread of its own; a job may Start others. False, with
  // `job` not run, when no thread could be made (the process limit): the
  // caller answers for it.
  [[nodiscard]] bool Start(std::function<void()> job);

  // Waits until no job is running, or until `timeout` has passed; true when
  // none is.
  bool WaitIdle(std::chrono::milliseconds timeout);

  // Waits for every job, then joins every thread. Jobs started meanwhile
  // (by jobs) are waited for too.
  void Join();

  // Jobs that have not returned yet.
  int64_t running() const;

 private:
  // Joins (outside the lock) the threads whose jobs have returned.
  void JoinFinished();

  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  // Threads whose job runs; a finished job moves its own thread to
  // finished_ (a std::thread is only a handle: moving it while the thread
  // runs is safe).
  std::list<std::thread> running_;
  std::vector<std::thread> finished_;
  int64_t jobs_ = 0;
};

}  // namespace mcpexec
