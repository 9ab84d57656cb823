#include "base/call_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>

#include "without_threads.h"

namespace mcpexec {
namespace {

using namespace std::chrono_literals;

// A gate jobs wait at until the test opens it.
class Latch {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

size_t ThreadsOfThisProcess() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST(CallPoolTest, EveryJobRunsOnAThreadOfItsOwnAtTheSameTime) {
  CallPool pool;
  constexpr int kJobs = 8;
  std::mutex mu;
  std::condition_variable cv;
  int entered = 0;
  Latch release;
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(pool.Start([&] {
      {
        std::lock_guard<std::mutex> lock(mu);
        ++entered;
        cv.notify_all();
      }
      release.Wait();
    }));
  }
  {
    // All eight are in at once: none waits for another's end.
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return entered == kJobs; }));
  }
  EXPECT_EQ(pool.running(), kJobs);
  release.Open();
  EXPECT_TRUE(pool.WaitIdle(10s));
  EXPECT_EQ(pool.running(), 0);
}

TEST(CallPoolTest, WaitIdleSaysAJobIsStillRunning) {
  CallPool pool;
  Latch release;
  ASSERT_TRUE(pool.Start([&] { release.Wait(); }));
  EXPECT_FALSE(pool.WaitIdle(50ms));
  EXPECT_EQ(pool.running(), 1);
  release.Open();
  EXPECT_TRUE(pool.WaitIdle(10s));
}

TEST(CallPoolTest, AJobMayStartAnotherAndJoinWaitsForBoth) {
  CallPool pool;
  std::atomic<int> done{0};
  ASSERT_TRUE(pool.Start([&] {
    EXPECT_TRUE(pool.Start([&] {
      std::this_thread::sleep_for(50ms);
      ++done;
    }));
    ++done;
  }));
  pool.Join();
  EXPECT_EQ(done.load(), 2);
  EXPECT_EQ(pool.running(), 0);
}

TEST(CallPoolTest, WhatAJobHoldsIsReleasedBeforeThePoolIsIdle) {
  CallPool pool;
  auto held = std::make_shared<int>(7);
  std::weak_ptr<int> watch = held;
  ASSERT_TRUE(pool.Start([held = std::move(held)] { (void)*held; }));
  ASSERT_TRUE(pool.WaitIdle(10s));
  // (A call's job holds its session's place in line: it must be free once
  // the call counts as ended.)
  EXPECT_TRUE(watch.expired());
}

TEST(CallPoolTest, ManyJobsLeaveNoThreadBehind) {
  const size_t before = ThreadsOfThisProcess();
  {
    CallPool pool;
    std::atomic<int> ran{0};
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(pool.Start([&] { ++ran; }));
    pool.Join();
    EXPECT_EQ(ran.load(), 200);
    EXPECT_EQ(ThreadsOfThisProcess(), before);
  }
  EXPECT_EQ(ThreadsOfThisProcess(), before);
}

TEST(CallPoolTest, TheDestructorWaitsForEveryJob) {
  std::atomic<bool> finished{false};
  {
    CallPool pool;
    ASSERT_TRUE(pool.Start([&] {
      std::this_thread::sleep_for(100ms);
      finished = true;
    }));
  }
  EXPECT_TRUE(finished.load());
}

// At the process limit (RLIMIT_NPROC, which runs share with the server where
// they keep its uid) no thread can be made: Start says so and runs nothing,
// and the pool stays usable.
TEST(CallPoolTest, WithoutAThreadToBeHadStartSaysSoAndRunsNothing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to take an unprivileged uid in a child";
  const int status = testing::RunWithoutThreads([] {
    CallPool pool;
    std::atomic<bool> ran{false};
    if (pool.Start([&] { ran = true; })) return 12;
    if (pool.running() != 0) return 13;
    if (!pool.WaitIdle(0ms)) return 14;
    pool.Join();
    return ran.load() ? 15 : 0;
  });
  EXPECT_EQ(status, 0) << "1 no uid or limit, 12 Start said yes, 13 counted, 14 not idle, "
                          "15 the job ran";
}

}  // namespace
}  // namespace mcpexec
