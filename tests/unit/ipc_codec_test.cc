// The one codec of the formats that cross a process boundary (ipc/frame.h)
// and the formats built on it: its bounds, and each format's layout as its
// header documents it (the Python side writes the same bytes:
// python_runtime/mcp_exec_runtime/frames.py).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ipc/frame.h"
#include "ipc/result_records.h"
#include "ipc/run_bundle.h"
#include "ipc/tool_frames.h"

namespace mcpexec::ipc {
namespace {

TEST(IpcFrameTest, AU32IsLittleEndian) {
  std::string out;
  AppendU32LE(&out, 0x04030201u);
  EXPECT_EQ(out, std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(LoadU32LE(out.data()), 0x04030201u);
  out.clear();
  AppendU32LE(&out, 0xFFFFFFFFu);
  EXPECT_EQ(LoadU32LE(out.data()), 0xFFFFFFFFu);
}

TEST(IpcFrameTest, AFieldIsItsLengthThenItsBytes) {
  std::string out;
  AppendField(&out, "abc");
  AppendField(&out, "");
  EXPECT_EQ(out, std::string("\x03\0\0\0abc\0\0\0\0", 11));
  size_t pos = 0;
  std::string a, b;
  ASSERT_TRUE(ReadField(out, &pos, &a));
  ASSERT_TRUE(ReadField(out, &pos, &b));
  EXPECT_EQ(a, "abc");
  EXPECT_EQ(b, "");
  EXPECT_EQ(pos, out.size());
  EXPECT_FALSE(ReadField(out, &pos, &a));  // nothing left
}

TEST(IpcFrameTest, AShortOrLyingInputMovesNothing) {
  size_t pos = 0;
  std::string got;
  uint32_t v = 0;
  EXPECT_FALSE(ReadU32(std::string("\x01\x02\x03", 3), &pos, &v));
  EXPECT_EQ(pos, 0u);
  // A length past the end, and the largest length there is.
  for (const std::string& in :
       {std::string("\x05\0\0\0abcd", 8), std::string("\xff\xff\xff\xff", 4)}) {
    pos = 0;
    EXPECT_FALSE(ReadField(in, &pos, &got));
    EXPECT_EQ(pos, 0u);
  }
  // A position past the end is not read from.
  pos = 100;
  EXPECT_FALSE(ReadU32(std::string("\0\0\0\0", 4), &pos, &v));
  EXPECT_FALSE(ReadField(std::string("\0\0\0\0", 4), &pos, &got));
}

TEST(RunBundleTest, CodeAndFilesComeBackAsTheyWent) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"data.csv", "a,b\n1,2\n"}, {"empty", ""}, {"bin", std::string("\0\xff\n", 3)}};
  const std::string bundle = EncodeRunBundle("print(1)", files);
  std::string code;
  std::vector<std::pair<std::string, std::string>> back;
  ASSERT_TRUE(DecodeRunBundle(bundle, &code, &back));
  EXPECT_EQ(code, "print(1)");
  EXPECT_EQ(back, files);
  // The layout: field code, u32 count, then path and content fields.
  EXPECT_EQ(bundle.substr(0, 12), std::string("\x08\0\0\0print(1)", 12));
  EXPECT_EQ(LoadU32LE(bundle.data() + 12), 3u);
}

TEST(RunBundleTest, ATruncatedOrLongerBundleIsRefused) {
  const std::string bundle = EncodeRunBundle("x", {{"f", "data"}});
  std::string code;
  std::vector<std::pair<std::string, std::string>> files;
  for (size_t n = 0; n < bundle.size(); ++n) {
    EXPECT_FALSE(DecodeRunBundle(bundle.substr(0, n), &code, &files)) << n;
  }
  EXPECT_FALSE(DecodeRunBundle(bundle + "z", &code, &files));
  // A count that claims more files than there are.
  std::string lying;
  AppendField(&lying, "x");
  AppendU32LE(&lying, 1000000);
  EXPECT_FALSE(DecodeRunBundle(lying, &code, &files));
}

TEST(ResultRecordsTest, ThePrefixIsTheHeadsThenTheBodysLength) {
  std::string prefix;
  AppendU32LE(&prefix, 17);
  AppendU32LE(&prefix, 123456);
  ASSERT_EQ(prefix.size(), kRecordPrefixBytes);
  const RecordPrefix p = LoadRecordPrefix(prefix.data());
  EXPECT_EQ(p.head_bytes, 17u);
  EXPECT_EQ(p.body_bytes, 123456u);
}

TEST(ToolFramesTest, AFrameIsOneFieldOfJson) {
  const std::string frame = ToolFrame({{"id", 1}, {"ok", true}});
  size_t pos = 0;
  std::string body;
  ASSERT_TRUE(ReadField(frame, &pos, &body));
  EXPECT_EQ(pos, frame.size());
  EXPECT_EQ(nlohmann::json::parse(body), nlohmann::json({{"id", 1}, {"ok", true}}));
  // Bytes that are not UTF-8 (a run's) are replaced, never thrown on.
  const std::string odd = ToolFrame({{"error", std::string("\xff\xfe")}});
  pos = 0;
  ASSERT_TRUE(ReadField(odd, &pos, &body));
  EXPECT_NO_THROW(nlohmann::json::parse(body));
}

}  // namespace
}  // namespace mcpexec::ipc
