// Changes: a waiter is woken by a change, not by a clock; a change made
// between its check and its wait is not lost; without one it wakes at its
// deadline.
#include "base/changes.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace mcpexec {
namespace {

using namespace std::chrono_literals;
using Clock = Changes::Clock;

TEST(ChangesTest, WithoutAChangeTheWaitEndsAtItsDeadline) {
  Changes changes;
  const uint64_t seen = changes.Seen();
  EXPECT_FALSE(changes.WaitPast(seen, Clock::now() + 20ms));
  EXPECT_EQ(changes.Seen(), seen);
}

TEST(ChangesTest, AChangeBetweenTheCheckAndTheWaitIsNotLost) {
  Changes changes;
  const uint64_t seen = changes.Seen();
  changes.Notify();  // after the waiter looked, before it waits
  const auto before = Clock::now();
  EXPECT_TRUE(changes.WaitPast(seen, Clock::now() + 60s));
  EXPECT_LT(Clock::now() - before, 30s);
}

TEST(ChangesTest, ANotifyFromAnotherThreadWakesTheWaiter) {
  Changes changes;
  const uint64_t seen = changes.Seen();
  std::thread other([&] {
    std::this_thread::sleep_for(10ms);
    changes.Notify();
  });
  EXPECT_TRUE(changes.WaitPast(seen, Clock::now() + 60s));
  other.join();
  EXPECT_EQ(changes.Seen(), seen + 1);
}

}  // namespace
}  // namespace mcpexec
