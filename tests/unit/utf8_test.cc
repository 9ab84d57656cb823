#include "base/utf8.h"

#include <gtest/gtest.h>

namespace mcpexec {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(RepairUtf8Test, ValidTextIsUnchanged) {
  for (std::string s :
       {std::string(""), std::string("hello\n"), std::string("h\xC3\xA9llo"),
        std::string("\xE2\x82\xAC \xF0\x9F\x98\x80"), std::string("nul\0byte", 8)}) {
    EXPECT_EQ(RepairUtf8(s), s);
  }
}

TEST(RepairUtf8Test, OneReplacementPerMaximalInvalidRun) {
  EXPECT_EQ(RepairUtf8("ok\xFF\xFE"
                       "bad"),
            "ok" + kFffd + "bad");
  EXPECT_EQ(RepairUtf8("\xFF"), kFffd);
  EXPECT_EQ(RepairUtf8("a\xFF"
                       "b\xFE"
                       "c"),
            "a" + kFffd + "b" + kFffd + "c");
  EXPECT_EQ(RepairUtf8("\x80\x80\x80\x80"), kFffd);
}

TEST(RepairUtf8Test, CutMultibyteCharacterIsRepaired) {
  EXPECT_EQ(RepairUtf8("ab\xC3"), "ab" + kFffd);
  EXPECT_EQ(RepairUtf8("ab\xE2\x82"), "ab" + kFffd);
  EXPECT_EQ(RepairUtf8("\xF0\x9F\x98"), kFffd);
  EXPECT_EQ(RepairUtf8("\xE2\x82"
                       "x"),
            kFffd + "x");
}

TEST(RepairUtf8Test, IllFormedSequencesAreInvalid) {
  EXPECT_EQ(RepairUtf8("\xC0\xAF"), kFffd);          // overlong '/'
  EXPECT_EQ(RepairUtf8("\xE0\x80\xAF"), kFffd);      // overlong
  EXPECT_EQ(RepairUtf8("\xED\xA0\x80"), kFffd);      // UTF-16 surrogate
  EXPECT_EQ(RepairUtf8("\xF4\x90\x80\x80"), kFffd);  // past U+10FFFF
  EXPECT_EQ(RepairUtf8("\xF5"), kFffd);
}

TEST(RepairUtf8Test, ValidCharacterEndsAnInvalidRun) {
  EXPECT_EQ(RepairUtf8("\xFF\xC3\xA9\xFF"), kFffd + "\xC3\xA9" + kFffd);
}

}  // namespace
}  // namespace mcpexec
