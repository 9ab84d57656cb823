#include "model/fair_share.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>

namespace mcpexec {
namespace {

TEST(FairShareTest, AnAskerAtItsShareGivesWayItself) {
  std::map<std::string, size_t> held{{"a", 4}, {"b", 1}};
  EXPECT_EQ(WhoGivesWay(held, std::string("a"), 4, false), "a");
  EXPECT_EQ(WhoGivesWay(held, std::string("b"), 4, false), std::nullopt);
}

TEST(FairShareTest, AFullPoolTakesFromTheClientHoldingTheMost) {
  std::map<std::string, size_t> held{{"a", 5}, {"b", 2}, {"c", 0}};
  const size_t none = std::numeric_limits<size_t>::max();
  EXPECT_EQ(WhoGivesWay(held, std::string("c"), none, true), "a");
  EXPECT_EQ(WhoGivesWay(held, std::string("b"), none, true), "a");
  // Never the asker, never one that would become the smaller.
  EXPECT_EQ(WhoGivesWay(held, std::string("a"), none, true), std::nullopt);
  std::map<std::string, size_t> even{{"a", 2}, {"b", 1}};
  EXPECT_EQ(WhoGivesWay(even, std::string("b"), none, true), std::nullopt);
}

}  // namespace
}  // namespace mcpexec
