#include "supervisor/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace mcpexec {
namespace {

TEST(SchedulerTest, AdmitsRunningPlusQueuedThenRefuses) {
  Scheduler s(2, 1);
  EXPECT_TRUE(s.Admit());
  EXPECT_TRUE(s.Admit());
  EXPECT_TRUE(s.Admit());
  EXPECT_FALSE(s.Admit());
  s.Withdraw();
  EXPECT_TRUE(s.Admit());
}

TEST(SchedulerTest, AcquireWaitsForASlotInOrder) {
  Scheduler s(1, 5);
  ASSERT_TRUE(s.Admit());
  ASSERT_TRUE(s.Acquire([] { return false; }));
  std::vector<int> order;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(s.Admit());
    threads.emplace_back([&, i] {
      ASSERT_TRUE(s.Acquire([] { return false; }));
      {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(i);
      }
      s.Release();
    });
    // Let thread i queue before thread i+1 does.
    while (s.waiting() < i + 1) std::this_thread::yield();
  }
  EXPECT_EQ(s.running(), 1);
  EXPECT_EQ(s.queued(), 3);
  s.Release();
  for (auto& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(s.running(), 0);
  EXPECT_EQ(s.queued(), 0);
}

TEST(SchedulerTest, AbandonedWaiterGivesItsPlaceBack) {
  Scheduler s(1, 1);
  ASSERT_TRUE(s.Admit());
  ASSERT_TRUE(s.Acquire([] { return false; }));
  ASSERT_TRUE(s.Admit());
  std::atomic<bool> gone{false};
  std::thread t([&] { EXPECT_FALSE(s.Acquire([&] { return gone.load(); })); });
  while (s.waiting() < 1) std::this_thread::yield();
  gone = true;
  s.Wake();
  t.join();
  EXPECT_EQ(s.queued(), 0);
  EXPECT_TRUE(s.Admit());
}

}  // namespace
}  // namespace mcpexec
