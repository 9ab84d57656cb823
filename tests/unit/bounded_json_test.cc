// base/bounded_json: the depth is measured on the bytes, before any value
// exists; deeper input is refused with the bound named; the id of a refused
// message is read without building what is nested.
#include "base/bounded_json.h"

#include <gtest/gtest.h>

#include <string>

#include "base/metrics.h"
#include "upstream/schema.h"

namespace mcpexec {
namespace {

std::string Nested(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(BoundedJsonTest, DepthCountsArraysAndObjectsOutsideStrings) {
  EXPECT_EQ(bounded_json::Depth("1", 100), 0);
  EXPECT_EQ(bounded_json::Depth("[]", 100), 1);
  EXPECT_EQ(bounded_json::Depth(R"({"a":[{"b":[]}]})", 100), 4);
  EXPECT_EQ(bounded_json::Depth(R"({"a":"[[[[{{{{"})", 100), 1) << "brackets in a string";
  EXPECT_EQ(bounded_json::Depth(R"(["\"[[[", []])", 100), 2) << "an escaped quote";
  EXPECT_EQ(bounded_json::Depth(R"(["\\", [[]]])", 100), 3) << "an escaped backslash";
  EXPECT_EQ(bounded_json::Depth(Nested(1000000), 65), 65) << "stops counting at the bound";
}

TEST(BoundedJsonTest, ParsesUpToTheBoundAndRefusesBeyond) {
  auto ok = bounded_json::Parse(Nested(64));
  EXPECT_TRUE(ok.ok()) << ok.error;
  EXPECT_TRUE(ok.value.is_array());
  auto deep = bounded_json::Parse(Nested(65));
  EXPECT_FALSE(deep.ok());
  EXPECT_TRUE(deep.too_deep);
  EXPECT_TRUE(deep.value.is_discarded());
  EXPECT_NE(deep.error.find("deeper than 64 levels"), std::string::npos) << deep.error;
  auto huge = bounded_json::Parse(Nested(1000000));
  EXPECT_TRUE(huge.too_deep);
  auto bad = bounded_json::Parse("{\"a\":");
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(bad.too_deep);
  EXPECT_EQ(bad.error.rfind("parse error", 0), 0u) << bad.error;
  EXPECT_EQ(bad.error.find("json.exception"), std::string::npos) << bad.error;
  EXPECT_EQ(bounded_json::Parse("[1,2]", 1).ok(), true);
  EXPECT_EQ(bounded_json::Parse("[[1]]", 1).too_deep, true);
}

TEST(BoundedJsonTest, TheIdOfARefusedMessageIsReadWithoutItsNesting) {
  const std::string deep =
      R"({"jsonrpc":"2.0","params":{"x":)" + Nested(200000) + R"(},"id":"abc","method":"ping"})";
  EXPECT_EQ(bounded_json::TopLevelId(deep), "abc");
  EXPECT_EQ(bounded_json::TopLevelId(R"({"id":7,"p":)" + Nested(100000) + "}"), 7);
  EXPECT_TRUE(bounded_json::TopLevelId(R"({"id":[1],"p":1})").is_null()) << "not an id";
  EXPECT_TRUE(bounded_json::TopLevelId(R"({"id":1.5})").is_null());
  EXPECT_TRUE(bounded_json::TopLevelId(Nested(100000)).is_null());
  EXPECT_TRUE(bounded_json::TopLevelId(R"({"id":7,"p":[[[)").is_null()) << "cut short";
}

TEST(SchemaFormatTest, Rfc3339DatesAndTimesWithoutARegex) {
  using upstream::IsRfc3339;
  EXPECT_TRUE(IsRfc3339("date-time", "2026-12-05T09:30:00Z"));
  EXPECT_TRUE(IsRfc3339("date-time", "2026-12-05t09:30:00.123456+01:00"));
  EXPECT_TRUE(IsRfc3339("date-time", "2024-02-29T23:59:60-12:30"));
  EXPECT_FALSE(IsRfc3339("date-time", "2023-02-29T00:00:00Z")) << "not a leap year";
  EXPECT_FALSE(IsRfc3339("date-time", "2026-12-05 09:30:00Z"));
  EXPECT_FALSE(IsRfc3339("date-time", "2026-12-05T24:00:00Z"));
  EXPECT_FALSE(IsRfc3339("date-time", "2026-12-05T09:30:00"));
  EXPECT_FALSE(IsRfc3339("date-time", "2026-12-05T09:30:00.Z"));
  EXPECT_FALSE(IsRfc3339("date-time", std::string(100000, '1')));
  EXPECT_TRUE(IsRfc3339("date", "2000-02-29"));
  EXPECT_FALSE(IsRfc3339("date", "1900-02-29"));
  EXPECT_FALSE(IsRfc3339("date", "2026-13-01"));
  EXPECT_FALSE(IsRfc3339("date", "2026-12-05T"));
  EXPECT_TRUE(IsRfc3339("time", "09:30:00+05:30"));
  EXPECT_FALSE(IsRfc3339("time", "09:30"));
  EXPECT_TRUE(IsRfc3339("email", "anything")) << "other formats are not ours to check";
}

TEST(SchemaFormatTest, PatternsRunOnRe2AndLongInputsAreSafe) {
  std::string why;
  std::vector<std::string> left;
  auto schema =
      upstream::ArgumentSchema::Compile(nlohmann::json::parse(R"({"type":"object","properties":{
        "w":{"type":"string","pattern":"^(a+)+$"},
        "pattern":{"type":"string"},
        "t":{"type":"string","format":"date-time"},
        "l":{"type":"object","patternProperties":{"^x-":{}},"additionalProperties":false},
        "b":{"type":"string","pattern":"(?=x)x"}}})"),
                                        &why, &left);
  ASSERT_TRUE(schema) << why;
  EXPECT_EQ(schema->Check({{"w", std::string(100000, 'a')}}), "");
  EXPECT_NE(schema->Check({{"w", std::string(100000, 'a') + "!"}}), "");
  EXPECT_EQ(schema->Check({{"pattern", "a property named pattern is a property"}}), "");
  EXPECT_NE(schema->Check({{"t", std::string(100000, '1')}}), "");
  EXPECT_EQ(schema->Check({{"l", {{"y-" + std::string(100000, 'z'), 1}}}}), "")
      << "patternProperties are left to the upstream";
  ASSERT_EQ(left.size(), 2u);
  const std::string both = left[0] + "\n" + left[1];
  EXPECT_NE(both.find("\"pattern\" at /properties/b"), std::string::npos) << both;
  EXPECT_NE(both.find("\"patternProperties\" at /properties/l and the additionalProperties"),
            std::string::npos)
      << both;
}

TEST(MetricsLabelTest, ValuesAreEscapedAndUnknownUpstreamsShareOneLabel) {
  EXPECT_EQ(Metrics::EscapeLabel("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  Metrics m;
  m.DeclareUpstreams({"fs"});
  m.RecordToolCall("fs", "ok", 0.01);
  m.RecordToolCall("\",outcome=\"ok\"} 31337\nmcp_exec_runs_total{outcome=\"ok\"} 9", "refused", 0);
  m.RecordToolCall(std::string(1 << 20, 'n'), "refused", 0);
  m.RecordToolFrameRefused("too deep");
  const std::string text = m.Render({});
  EXPECT_EQ(text.find("31337"), std::string::npos);
  EXPECT_EQ(text.find("nnnn"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_tool_calls_total{upstream=\"unknown\",outcome=\"refused\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("mcp_exec_tool_frames_refused_total{why=\"too deep\"} 1"), std::string::npos);
  Metrics none;  // no upstreams: no code-mode series at all
  none.RecordToolCall("x", "refused", 0);
  EXPECT_EQ(none.Render({}).find("mcp_exec_tool_calls_total"), std::string::npos);
}

}  // namespace
}  // namespace mcpexec
