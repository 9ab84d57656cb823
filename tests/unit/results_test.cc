#include "supervisor/results.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "base/base64.h"
#include "base/utf8.h"
#include "model/config.h"
#include "tool/contract.h"

namespace mcpexec {
namespace {

using json = nlohmann::json;

// A PNG's signature and IHDR chunk (what the reader checks), w x h pixels.
std::string Png(uint32_t w, uint32_t h) {
  std::string png("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16);
  for (uint32_t v : {w, h}) {
    for (int shift = 24; shift >= 0; shift -= 8) png += static_cast<char>((v >> shift) & 0xFF);
  }
  return png + std::string("\x08\x00\x00\x00\x00", 5) + "crc.pixels";
}
const std::string kPng = Png(640, 480);

// The frame: header and payload lengths (little-endian host), then both.
std::string Frame(const std::string& head, const std::string& payload) {
  uint32_t n[2] = {static_cast<uint32_t>(head.size()), static_cast<uint32_t>(payload.size())};
  return std::string(reinterpret_cast<const char*>(n), 8) + head + payload;
}
std::string Record(const json& header, const std::string& payload) {
  return Frame(header.dump(), payload);
}

ResultLimits Limits() { return {2, 1024, 2, 100, 10, 2000}; }

// Feeds the bytes through a real pipe, as the run writes them.
RunOutcome Parse(const std::string& bytes, ResultLimits limits = Limits()) {
  int p[2];
  EXPECT_EQ(pipe2(p, O_NONBLOCK), 0);
  ResultsReader reader(limits);
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = write(p[1], bytes.data() + off, std::min<size_t>(bytes.size() - off, 4096));
    if (n > 0) off += static_cast<size_t>(n);
    reader.Read(p[0]);
  }
  close(p[1]);
  EXPECT_FALSE(reader.Read(p[0]));  // EOF
  close(p[0]);
  RunOutcome o;
  reader.Finish(&o);
  return o;
}

TEST(ResultsReaderTest, ImagesFilesAndResultAreKeptInOrder) {
  RunOutcome o = Parse(Record({{"kind", "image"}, {"mimeType", "image/png"}}, kPng) +
                       Record({{"kind", "file"}, {"path", "out/a.csv"}}, "a,b\n") +
                       Record({{"kind", "result"}, {"truncated", false}}, "42"));
  ASSERT_EQ(o.images.size(), 1u);
  EXPECT_EQ(o.images[0].data, kPng);
  ASSERT_EQ(o.files.size(), 1u);
  EXPECT_EQ(o.files[0].name, "out/a.csv");
  EXPECT_TRUE(o.has_result);
  EXPECT_EQ(o.result, "42");
}

TEST(ResultsReaderTest, WhatTheRunCannotBeTrustedWithIsDropped) {
  RunOutcome o =
      Parse(Record({{"kind", "image"}, {"mimeType", "image/png"}}, "not a png") +    // not PNG
            Record({{"kind", "image"}, {"mimeType", "image/svg+xml"}}, kPng) +       // wrong type
            Record({{"kind", "image"}, {"mimeType", "image/png"}}, Png(8001, 10)) +  // too wide
            Record({{"kind", "image"}, {"mimeType", "image/png"}}, Png(10, 0)) +     // empty
            Record({{"kind", "image"}, {"mimeType", "image/png"}},
                   "<svg xmlns='http://www.w3.org/2000/svg'/>") +         // an SVG labelled PNG
            Record({{"kind", "file"}, {"path", "../etc/passwd"}}, "x") +  // outside out/
            Record({{"kind", "file"}, {"path", "out/../x"}}, "x") +       // ..
            Record({{"kind", "file"}, {"path", "/out/x"}}, "x") +         // absolute
            Record({{"kind", "file"}, {"path", 5}}, "x") +                // wrong type
            Record({{"kind", "mystery"}}, "x") +                          // unknown
            Record({{"kind", "result"}, {"truncated", false}}, "0123456789abcdef"));  // past 10
  EXPECT_TRUE(o.images.empty());
  EXPECT_EQ(o.images_omitted, 5);
  EXPECT_TRUE(o.files.empty());
  EXPECT_EQ(o.result, "0123456789");
  EXPECT_TRUE(o.result_truncated);
}

TEST(ResultsReaderTest, BoundsCountWhatWasLeftOut) {
  std::string in;
  for (int i = 0; i < 3; ++i) in += Record({{"kind", "image"}, {"mimeType", "image/png"}}, kPng);
  in += Record({{"kind", "file"}, {"path", "out/1"}}, std::string(60, 'x'));
  in += Record({{"kind", "file"}, {"path", "out/2"}}, std::string(60, 'x'));  // past 100 bytes
  in += Record({{"kind", "images_omitted"}, {"count", 4}}, "");
  RunOutcome o = Parse(in);
  EXPECT_EQ(o.images.size(), 2u);
  EXPECT_EQ(o.images_omitted, 5);
  ASSERT_EQ(o.files.size(), 1u);
  ASSERT_EQ(o.files_omitted.size(), 1u);
  EXPECT_EQ(o.files_omitted[0].path, "out/2");
  EXPECT_EQ(o.files_omitted[0].why, "bytes");
}

// Issue 19, point 6: one header that did not parse (a name that is not
// UTF-8, say) stopped the parsing of every later record.
TEST(ResultsReaderTest, ABadRecordCostsOnlyItself) {
  RunOutcome o =
      Parse(Frame("{\"kind\": \"file\", \"path\": \"out/b\xff\"}", "x") + Frame("not json", "") +
            Record({{"kind", "file"}, {"path", "out/\u202etxt.exe"}}, "y") +
            Record({{"kind", "file"}, {"path", "out/c.txt"}}, "z") +
            Record({{"kind", "files_omitted"},
                    {"count", 2},
                    {"files",
                     {{{"path", "out/new\nline"}, {"bytes", 3}, {"why", "name"}},
                      {{"path", "out/locked"}, {"bytes", 0}, {"why", "unreadable"}}}}},
                   "") +
            Record({{"kind", "images_omitted"}, {"count", 2}}, ""));
  ASSERT_EQ(o.files.size(), 1u);
  EXPECT_EQ(o.files[0].name, "out/c.txt");
  ASSERT_EQ(o.files_omitted.size(), 3u);
  EXPECT_EQ(o.files_omitted[0].path, "out/\\u202etxt.exe");
  EXPECT_EQ(o.files_omitted[0].why, "name");
  EXPECT_EQ(o.files_omitted[1].path, "out/new\\x0aline");
  EXPECT_EQ(o.files_omitted[2].why, "unreadable");
  EXPECT_EQ(o.files_omitted_count, 3);
  EXPECT_EQ(o.images_omitted, 2);
}

TEST(Utf8Test, EscapeNameShowsWhatHidesText) {
  EXPECT_EQ(EscapeName("out/plain é.csv"), "out/plain é.csv");
  EXPECT_EQ(EscapeName("a\xff"
                       "b"),
            "a\\xffb");
  EXPECT_EQ(EscapeName("a\nb\x7f"), "a\\x0ab\\x7f");
  EXPECT_EQ(EscapeName("a\u202eb\u2066"), "a\\u202eb\\u2066");
  EXPECT_EQ(EscapeName("\xc2\x85"), "\\u0085");  // C1 NEL
  EXPECT_EQ(EscapeName(EscapeName("a\xff\n")), EscapeName("a\xff\n"));
}

TEST(ResultsReaderTest, GarbageAndFloodsStopParsingWithoutHarm) {
  RunOutcome o = Parse(std::string("\xff\xff\xff\xff garbage", 12));
  EXPECT_TRUE(o.images.empty());
  // A flood far past the keep bound is read and dropped (the writer never
  // blocks); the record before it survives.
  std::string flood = Record({{"kind", "result"}}, "ok") + std::string(4 << 20, 'z');
  o = Parse(flood);
  EXPECT_EQ(o.result, "ok");
}

TEST(ResultsReaderTest, OutFilePaths) {
  EXPECT_TRUE(IsOutFilePath("out/a.csv"));
  EXPECT_TRUE(IsOutFilePath("out/sub/b"));
  for (const char* bad : {"out", "out/", "a/out/x", "out//x", "out/./x", "out/../x", "/out/x"}) {
    EXPECT_FALSE(IsOutFilePath(bad)) << bad;
  }
  EXPECT_FALSE(IsOutFilePath(std::string("out/a\0b", 7)));
}

TEST(Base64Test, RoundTripAndStrictDecoding) {
  for (const std::string& s : {std::string(), std::string("a"), std::string("ab"),
                               std::string("abc"), std::string("\x00\xff\x10", 3)}) {
    EXPECT_EQ(Base64Decode(Base64Encode(s)), s);
  }
  EXPECT_EQ(Base64Encode("hello"), "aGVsbG8=");
  for (const char* bad : {"abc", "ab=c", "a===", "@@@@", "aGVs bG8=", "=aaa"}) {
    EXPECT_FALSE(Base64Decode(bad)) << bad;
  }
}

TEST(Utf8TailTest, StartsOnACharacterBoundary) {
  std::string s = "ab\xc3\xa9\xc3\xa9";  // "abéé"
  EXPECT_EQ(Utf8Tail(s, 3), "\xc3\xa9");
  EXPECT_EQ(Utf8Tail(s, 100), s);
  EXPECT_TRUE(IsValidUtf8(std::string(Utf8Tail(s, 3))));
}

Config FilesConfig() {
  Config c;
  c.max_in_files = 3;
  c.max_in_bytes = 10;
  return c;
}

std::string FilesError(const json& files) {
  std::vector<std::pair<std::string, std::string>> out;
  auto err = ValidateFiles(files, FilesConfig(), &out);
  return err ? *err : "";
}

TEST(ExecFilesTest, GoodFilesAreDecoded) {
  std::vector<std::pair<std::string, std::string>> out;
  EXPECT_FALSE(
      ValidateFiles({{"a.txt", "hi"}, {"d/b.bin", {{"base64", "AAE="}}}}, FilesConfig(), &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], std::make_pair(std::string("a.txt"), std::string("hi")));
  EXPECT_EQ(out[1].second, std::string("\x00\x01", 2));
}

TEST(ExecFilesTest, BadFilesNameThePath) {
  EXPECT_NE(FilesError({{"/etc/x", "a"}}).find("/etc/x"), std::string::npos);
  EXPECT_NE(FilesError({{"../x", "a"}}).find("../x"), std::string::npos);
  EXPECT_NE(FilesError({{"a/../../x", "a"}}).find(".."), std::string::npos);
  EXPECT_NE(FilesError({{"", "a"}}).find("empty"), std::string::npos);
  EXPECT_NE(FilesError({{std::string("a\0b", 3), "a"}}).find("NUL"), std::string::npos);
  EXPECT_NE(FilesError({{"a//b", "a"}}).find("empty part"), std::string::npos);
  EXPECT_NE(FilesError({{"n", 5}}).find("\"n\""), std::string::npos);
  EXPECT_NE(FilesError({{"n", {{"base64", 5}}}}).find("\"n\""), std::string::npos);
  EXPECT_NE(FilesError({{"n", {{"other", "x"}}}}).find("\"n\""), std::string::npos);
  EXPECT_NE(FilesError({{"n", {{"base64", "@@@@"}}}}).find("base64"), std::string::npos);
  EXPECT_NE(FilesError("a string").find("object"), std::string::npos);
  EXPECT_NE(
      FilesError({{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}).find("MCP_EXEC_MAX_IN_FILES"),
      std::string::npos);
  EXPECT_NE(FilesError({{"a", "123456"}, {"b", "123456"}}).find("MCP_EXEC_MAX_IN_BYTES"),
            std::string::npos);
  EXPECT_NE(FilesError({{"a", "x"}, {"a/b", "y"}}).find("also a folder"), std::string::npos);
}

TEST(ExecResultExtrasTest, ContentItemsFollowTheTextItem) {
  ExecResult r;
  r.images.push_back({"", "image/png", kPng, "", 0});
  r.files.push_back({"out/r.csv", "", "a,b\n", "", 0});
  r.files.push_back({"out/b.bin", "", std::string("\xff\x00", 2), "", 0});
  r.has_result = true;
  r.result = "3";
  r.stdout_lost = true;
  r.stdout_tail = "end\n";
  json t = ToolResult(r);
  ASSERT_EQ(t["content"].size(), 4u);
  EXPECT_EQ(t["content"][0]["type"], "text");
  EXPECT_EQ(t["content"][1]["type"], "image");
  EXPECT_EQ(t["content"][1]["mimeType"], "image/png");
  EXPECT_EQ(Base64Decode(t["content"][1]["data"].get<std::string>()), kPng);
  EXPECT_EQ(t["content"][2]["resource"]["uri"], "file:///out/r.csv");
  EXPECT_EQ(FileUri("out/%2e%2e%2f x?#\n\xc3\xa9"),
            "file:///out/%252e%252e%252f%20x%3F%23%0A%C3%A9");
  EXPECT_EQ(t["content"][2]["resource"]["mimeType"], "text/csv");
  EXPECT_EQ(t["content"][2]["resource"]["text"], "a,b\n");
  EXPECT_EQ(t["content"][3]["resource"]["blob"], Base64Encode(std::string("\xff\x00", 2)));
  const json& s = t["structuredContent"];
  EXPECT_EQ(s["result"], "3");
  EXPECT_EQ(s["stdout_tail"], "end\n");
  EXPECT_FALSE(s.contains("stderr_tail"));
  EXPECT_EQ(s["images"], 1);
  EXPECT_EQ(s["files"], json::array({"out/r.csv", "out/b.bin"}));
  EXPECT_EQ(json::parse(t["content"][0]["text"].get<std::string>()), s);
}

TEST(ExecResultExtrasTest, APlainRunHasNoExtras) {
  json s = StructuredResult(ExecResult{});
  for (const char* k : {"stdout_tail", "stderr_tail", "result", "images", "files"}) {
    EXPECT_FALSE(s.contains(k)) << k;
  }
  EXPECT_EQ(MimeTypeForPath("out/X.JSON"), "application/json");
  EXPECT_EQ(MimeTypeForPath("out/noext"), "application/octet-stream");
}

}  // namespace
}  // namespace mcpexec
