// Python session handles (supervisor/session_handles.h): their shape, that
// they are never handed out twice, and the bounded word on ended ones.
#include "supervisor/session_handles.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "base/random.h"

namespace mcpexec {
namespace {

TEST(HandleBookTest, HandlesAreUrlSafeDistinctAndOfTheirShape) {
  HandleBook book;
  std::set<std::string> seen;
  for (int i = 0; i < 20000; ++i) {
    const std::string h = book.Mint();
    ASSERT_EQ(h.size(), 27u) << h;
    ASSERT_EQ(h.rfind("py-", 0), 0u) << h;
    ASSERT_TRUE(HandleBook::LooksLikeHandle(h)) << h;
    ASSERT_TRUE(seen.insert(h).second) << "minted twice: " << h;
  }
  HandleBook routed("mcp-exec-2");
  const std::string h = routed.Mint();
  EXPECT_EQ(h.rfind("mcp-exec-2.py-", 0), 0u) << h;
  EXPECT_TRUE(HandleBook::LooksLikeHandle(h));
  EXPECT_LE(h.size(), 64u);
  for (const char* name : {"nb", "py-", "py-short", "new", "a.b.py-AAAAAAAAAAAAAAAAAAAAAAAA",
                           "py-AAAAAAAAAAAAAAAAAAAAAAA!"}) {
    EXPECT_FALSE(HandleBook::LooksLikeHandle(name)) << name;
  }
}

TEST(HandleBookTest, AnEndedHandleSaysWhyUntilItIsForgotten) {
  HandleBook book;
  const std::string first = book.Mint();
  EXPECT_FALSE(book.WhyGone(first));
  book.Ended(first, "idle 10 min");
  EXPECT_EQ(book.WhyGone(first), "idle 10 min");
  book.Ended(first, "again");  // the first word stays
  EXPECT_EQ(book.WhyGone(first), "idle 10 min");
  for (size_t i = 0; i < HandleBook::kRemembered; ++i) book.Ended(book.Mint(), "x");
  EXPECT_FALSE(book.WhyGone(first)) << "the oldest word is forgotten past the bound";
}

TEST(RandomTokenTest, EighteenBytesAre24UrlSafeCharacters) {
  const std::string t = RandomToken(18);
  EXPECT_EQ(t.size(), 24u);
  EXPECT_EQ(t.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"),
            std::string::npos)
      << t;
  EXPECT_NE(RandomToken(18), t);
}

}  // namespace
}  // namespace mcpexec
