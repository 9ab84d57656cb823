#include "tool/contract.h"

#include <gtest/gtest.h>

namespace mcpexec {
namespace {

using json = nlohmann::json;

Config TestConfig() {
  Config c;
  c.default_timeout_s = 30;
  c.max_timeout_s = 300;
  c.max_stdin_bytes = 10;
  c.max_code_bytes = 100;
  return c;
}

std::string ErrorOf(const json& args) {
  auto r = ValidateExecArguments(args, TestConfig());
  auto* err = std::get_if<std::string>(&r);
  return err ? *err : "";
}

ExecRequest RequestOf(const json& args) {
  auto r = ValidateExecArguments(args, TestConfig());
  EXPECT_TRUE(std::holds_alternative<ExecRequest>(r)) << std::get<std::string>(r);
  return std::get<ExecRequest>(r);
}

TEST(ExecValidationTest, EmptyCode) {
  EXPECT_EQ(ErrorOf(json::object()), "code must not be empty");
  EXPECT_EQ(ErrorOf({{"code", ""}}), "code must not be empty");
  EXPECT_EQ(ErrorOf({{"code", " \n\t "}}), "code must not be empty");
  // A wrong type: the contract's message first, then what came instead.
  EXPECT_EQ(ErrorOf({{"code", 5}}),
            "code must not be empty: it must be a string of Python source, not a number");
  EXPECT_EQ(ErrorOf({{"code", nullptr}}),
            "code must not be empty: it must be a string of Python source, not null");
  EXPECT_EQ(ErrorOf({{"code", json::array()}}),
            "code must not be empty: it must be a string of Python source, not a array");
}

// {"script": ...}: the contract's message, then the mistake by name.
TEST(ExecValidationTest, AMissingCodeBesideUnknownArgumentsNamesThem) {
  EXPECT_EQ(ErrorOf({{"script", "print(1)"}}),
            "code must not be empty: the required argument code is missing, and script is not an "
            "argument of exec (accepted: code, timeout_s, stdin, files, session, reset, end); "
            "pass the Python source as code");
  EXPECT_NE(ErrorOf({{"source", "1"}, {"python", "1"}, {"timeout_s", 5}})
                .find("and python, source are not arguments of exec"),
            std::string::npos);
  // With code present, an unknown argument is named as before.
  EXPECT_EQ(ErrorOf({{"code", "1"}, {"timeout", 5}}),
            "unknown argument: timeout (accepted: code, timeout_s, stdin, files, session, reset, "
            "end)");
}

TEST(ExecValidationTest, UnicodeWhitespaceOnlyIsEmpty) {
  // Go's strings.TrimSpace: \v \f \r U+0085 U+00A0 U+1680 U+2000..U+200A
  // U+2028 U+2029 U+202F U+205F U+3000.
  EXPECT_EQ(ErrorOf({{"code", "\v\f\r \xC2\x85\xC2\xA0\xE3\x80\x80"}}), "code must not be empty");
  EXPECT_EQ(ErrorOf({{"code",
                      "\xE1\x9A\x80\xE2\x80\x80\xE2\x80\x8A\xE2\x80\xA8\xE2\x80\xA9"
                      "\xE2\x80\xAF\xE2\x81\x9F"}}),
            "code must not be empty");
  // Not white space: a zero-width space (U+200B), NUL, an invalid byte, a letter.
  EXPECT_EQ(ErrorOf({{"code", "\xE2\x80\x8B"}}), "");
  EXPECT_EQ(ErrorOf({{"code", std::string(" \0 ", 3)}}), "");
  EXPECT_EQ(ErrorOf({{"code", " \xFF "}}), "");
  EXPECT_EQ(ErrorOf({{"code", "\xC2\xA0x"}}), "");
}

TEST(ExecValidationTest, CodeIsCheckedBeforeUnknownArgumentsAndTypes) {
  // The contract's message first; a missing code then says what came instead.
  EXPECT_EQ(ErrorOf({{"bogus", 1}})
                .rfind("code must not be empty: the required argument code is "
                       "missing, and bogus is not an argument",
                       0),
            0u);
  EXPECT_EQ(ErrorOf({{"code", " "}, {"timeout_s", "5"}}), "code must not be empty");
}

TEST(ExecValidationTest, UnknownArgumentIsNamed) {
  EXPECT_NE(ErrorOf({{"code", "print(1)"}, {"bogus", 1}}).find("bogus"), std::string::npos);
}

TEST(ExecValidationTest, WrongTypesAreNamed) {
  EXPECT_NE(ErrorOf({{"code", "1"}, {"timeout_s", "5"}}).find("timeout_s"), std::string::npos);
  EXPECT_NE(ErrorOf({{"code", "1"}, {"timeout_s", 2.5}}).find("timeout_s"), std::string::npos);
  EXPECT_NE(ErrorOf({{"code", "1"}, {"timeout_s", true}}).find("timeout_s"), std::string::npos);
  EXPECT_NE(ErrorOf({{"code", "1"}, {"stdin", 5}}).find("stdin"), std::string::npos);
}

TEST(ExecValidationTest, TypesAreCheckedBeforeStdinSize) {
  EXPECT_NE(ErrorOf({{"code", "1"}, {"stdin", std::string(50, 'x')}, {"timeout_s", "5"}})
                .find("timeout_s"),
            std::string::npos);
}

TEST(ExecValidationTest, IntegerValuedFloatIsAccepted) {
  EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", 5.0}}).timeout_s, 5);
}

TEST(ExecValidationTest, StdinCapIsInUtf8Bytes) {
  EXPECT_EQ(ErrorOf({{"code", "1"}, {"stdin", std::string(11, 'x')}}),
            "stdin exceeds limit of 10 bytes (MCP_EXEC_MAX_STDIN_BYTES): it is 11 bytes in UTF-8; "
            "pass large data in files instead, or raise the limit");
  EXPECT_EQ(RequestOf({{"code", "1"}, {"stdin", std::string(10, 'x')}}).stdin_data.size(), 10u);
  // 5 x "é" is 10 bytes (accepted), 6 x is 12 (refused): bytes, not characters.
  std::string e5, e6;
  for (int i = 0; i < 5; ++i) e5 += "\xC3\xA9";
  e6 = e5 + "\xC3\xA9";
  EXPECT_EQ(ErrorOf({{"code", "1"}, {"stdin", e5}}), "");
  EXPECT_EQ(
      ErrorOf({{"code", "1"}, {"stdin", e6}})
          .rfind("stdin exceeds limit of 10 bytes (MCP_EXEC_MAX_STDIN_BYTES): it is 12 bytes", 0),
      0u);
}

TEST(ExecValidationTest, CodeCap) {
  EXPECT_EQ(ErrorOf({{"code", std::string(101, 'x')}}),
            "code exceeds limit of 100 bytes (MCP_EXEC_MAX_CODE_BYTES): it is 101 bytes in UTF-8; "
            "put data in files or stdin instead of the code, or raise the limit");
  EXPECT_EQ(ErrorOf({{"code", std::string(100, 'x')}}), "");
}

TEST(ExecValidationTest, TimeoutClamping) {
  EXPECT_EQ(RequestOf({{"code", "1"}}).timeout_s, 30);
  EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", 0}}).timeout_s, 30);
  EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", -5}}).timeout_s, 1);
  EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", 1}}).timeout_s, 1);
  EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", 300}}).timeout_s, 300);
  EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", 301}}).timeout_s, 300);
  EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", 1e300}}).timeout_s, 300);
  EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", 18446744073709551615ull}}).timeout_s, 300);
}

// A clamp is never silent: the result says what was given and what applied.
TEST(ExecValidationTest, AClampedTimeoutSaysWhatApplied) {
  EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", 1000}}).timeout_note,
            "timeout_s 1000 is above MCP_EXEC_MAX_TIMEOUT_S (300): the run had 300 s");
  EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", -5}}).timeout_note,
            "timeout_s -5 is below 1: the run had 1 s");
  EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", 1e30}}).timeout_note,
            "timeout_s 1e+30 is above MCP_EXEC_MAX_TIMEOUT_S (300): the run had 300 s")
      << "the number as sent, not as saturated";
  for (int t : {0, 1, 10, 300}) {
    EXPECT_EQ(RequestOf({{"code", "1"}, {"timeout_s", t}}).timeout_note, "") << t;
  }
  EXPECT_EQ(RequestOf({{"code", "1"}}).timeout_note, "");
  ExecResult r;
  r.timeout_note = "timeout_s 1000 is above MCP_EXEC_MAX_TIMEOUT_S (300): the run had 300 s";
  EXPECT_EQ(StructuredResult(r)["timeout_note"], r.timeout_note);
  EXPECT_FALSE(StructuredResult(ExecResult{}).contains("timeout_note"));
}

TEST(ExecValidationTest, NullIsAWrongTypeNamingTheArgument) {
  EXPECT_EQ(ErrorOf({{"code", "1"}, {"timeout_s", nullptr}}),
            "timeout_s must be an integer number of seconds, not null");
  EXPECT_EQ(ErrorOf({{"code", "1"}, {"stdin", nullptr}}), "stdin must be a string, not null");
}

TEST(ExecValidationTest, DefaultAboveMaxIsClamped) {
  Config c = TestConfig();
  c.default_timeout_s = 600;
  EXPECT_EQ(ClampTimeout(std::nullopt, c), 300);
}

TEST(ExecSchemaTest, InputSchemaIsTheContract) {
  json s = ExecInputSchema();
  EXPECT_EQ(s["type"], "object");
  EXPECT_EQ(s["additionalProperties"], false);
  EXPECT_EQ(s["required"], json::array({"code"}));
  EXPECT_EQ(s["properties"]["code"]["type"], "string");
  EXPECT_EQ(s["properties"]["timeout_s"]["type"], "integer");
  EXPECT_EQ(s["properties"]["stdin"]["type"], "string");
  // Ours, optional (the contract allows extra fields): input files.
  EXPECT_EQ(s["properties"]["files"]["type"], "object");
  // And the session: a name and a reset flag.
  EXPECT_EQ(s["properties"]["session"]["type"], "string");
  EXPECT_EQ(s["properties"]["session"]["pattern"], "^[A-Za-z0-9._-]{1,64}$");
  EXPECT_EQ(s["properties"]["reset"]["type"], "boolean");
  EXPECT_EQ(s["properties"]["end"]["type"], "boolean");
  EXPECT_EQ(s["properties"].size(), 7u);
}

TEST(ExecSessionArgsTest, NamesAreCheckedAndResetNeedsOne) {
  Config c;
  auto ok = ValidateExecArguments({{"code", "x"}, {"session", "nb-1.v_2"}, {"reset", true}}, c);
  ASSERT_TRUE(std::holds_alternative<ExecRequest>(ok));
  EXPECT_EQ(std::get<ExecRequest>(ok).session, "nb-1.v_2");
  EXPECT_TRUE(std::get<ExecRequest>(ok).reset);
  for (const json& bad :
       {json(""), json(std::string(65, 'a')), json("a b"), json("a/b"), json("é"), json("x\n")}) {
    auto r = ValidateExecArguments({{"code", "x"}, {"session", bad}}, c);
    ASSERT_TRUE(std::holds_alternative<std::string>(r)) << bad;
    EXPECT_NE(std::get<std::string>(r).find("is not a valid name"), std::string::npos);
    EXPECT_NE(std::get<std::string>(r).find(bad.dump()), std::string::npos) << "names it";
  }
  auto typed = ValidateExecArguments({{"code", "x"}, {"session", 7}}, c);
  EXPECT_EQ(std::get<std::string>(typed), "session must be a string, not number");
  auto reset_alone = ValidateExecArguments({{"code", "x"}, {"reset", true}}, c);
  EXPECT_NE(std::get<std::string>(reset_alone).find("reset needs a session"), std::string::npos);
  auto reset_typed = ValidateExecArguments({{"code", "x"}, {"session", "a"}, {"reset", "yes"}}, c);
  EXPECT_EQ(std::get<std::string>(reset_typed), "reset must be a boolean, not string");
  auto end_alone = ValidateExecArguments({{"code", "x"}, {"end", true}}, c);
  EXPECT_NE(std::get<std::string>(end_alone).find("end needs a session"), std::string::npos);
  auto end_typed = ValidateExecArguments({{"code", "x"}, {"session", "a"}, {"end", 1}}, c);
  EXPECT_EQ(std::get<std::string>(end_typed), "end must be a boolean, not number");
  auto end_ok = ValidateExecArguments({{"code", "x"}, {"session", "a"}, {"end", true}}, c);
  EXPECT_TRUE(std::get<ExecRequest>(end_ok).end);
  EXPECT_TRUE(IsValidSessionName(std::string(64, 'z')));
}

TEST(ExecSessionArgsTest, ResultNamesTheSession) {
  ExecResult r;
  json plain = StructuredResult(r);
  EXPECT_FALSE(plain.contains("session"));
  EXPECT_FALSE(plain.contains("session_new"));
  r.session = "nb";
  r.session_new = true;
  json j = StructuredResult(r);
  EXPECT_EQ(j["session"], "nb");
  EXPECT_EQ(j["session_new"], true);
  EXPECT_FALSE(j.contains("session_ended"));
  r.session_ended = "its interpreter exited with status 3";
  EXPECT_EQ(StructuredResult(r)["session_ended"], "its interpreter exited with status 3");
}

TEST(ExecSchemaTest, OutputSchemaRequiresTheSixFields) {
  json s = ExecOutputSchema();
  EXPECT_EQ(s["required"], json::array({"stdout", "stderr", "exit_code", "duration_ms", "truncated",
                                        "timed_out"}));
}

TEST(ExecResultTest, StructuredAndTextAgree) {
  ExecResult r;
  r.stdout_data =
      "ok\xFF\xFE"
      "bad";
  r.exit_code = 3;
  json t = ToolResult(r);
  EXPECT_EQ(t["isError"], false);
  EXPECT_EQ(t["structuredContent"]["stdout"],
            "ok\xEF\xBF\xBD"
            "bad");
  EXPECT_EQ(json::parse(t["content"][0]["text"].get<std::string>()), t["structuredContent"]);
  for (const char* k : {"stdout", "stderr", "exit_code", "duration_ms", "truncated", "timed_out"}) {
    EXPECT_TRUE(t["structuredContent"].contains(k)) << k;
  }
}

// A client that keeps only the text's head (Codex cuts at 10 KiB) keeps the
// flags and the tails, not the middle of stdout.
TEST(ExecResultTest, TheTextPutsTheSmallFieldsFirstAndTheStreamsLast) {
  ExecResult r;
  r.stdout_data = std::string(20000, 'x');
  r.stderr_data = "boom";
  r.exit_code = 1;
  r.reason = "timeout";
  r.timed_out = true;
  r.truncated = true;
  r.stdout_lost = true;
  r.stdout_tail = "the end";
  r.has_result = true;
  r.result = "42";
  json t = ToolResult(r);
  const std::string text = t["content"][0]["text"];
  EXPECT_EQ(json::parse(text), t["structuredContent"]) << "the same fields, in another order";
  EXPECT_EQ(text.rfind("{\"exit_code\":1,\"timed_out\":true,\"truncated\":true,"
                       "\"reason\":\"timeout\",",
                       0),
            0u)
      << text.substr(0, 200);
  const std::string head = text.substr(0, 10240);
  for (const char* k :
       {"duration_ms", "queue_ms", "\"result\":\"42\"", "\"stdout_tail\":\"the end\""}) {
    EXPECT_NE(head.find(k), std::string::npos) << k;
  }
  EXPECT_LT(text.find("\"stdout_tail\""), text.find("\"stdout\""));
  EXPECT_LT(text.find("\"stdout\""), text.find("\"stderr\":\"boom\""));
}

// The text item is the one models read: a stream past its budget shows its
// head and tail and says so; structuredContent keeps it as the cap left it.
TEST(ExecResultTest, TheTextCutsAStreamPastItsBudgetToItsEndsSayingSo) {
  ExecResult r;
  r.stdout_data = "HEAD" + std::string(100000, 'x') + "TAIL";
  r.stdout_uri = "mcp-exec://resource/0123/stdout";
  r.stdout_size = 5 << 20;
  r.stderr_data = std::string(300, '\x01');  // 1800 bytes once escaped
  r.text_output_bytes = 1000;
  json t = ToolResult(r);
  EXPECT_EQ(t["structuredContent"]["stdout"], r.stdout_data);
  EXPECT_EQ(t["structuredContent"]["stderr"], r.stderr_data);
  const json text = json::parse(t["content"][0]["text"].get<std::string>());
  const std::string out = text["stdout"];
  EXPECT_EQ(out.rfind("HEAD", 0), 0u);
  EXPECT_EQ(out.substr(out.size() - 4), "TAIL");
  EXPECT_NE(
      out.find("\n[... 99008 bytes of stdout left out of this text: see stdout_in_text ...]\n"),
      std::string::npos)
      << out.substr(0, 600);
  EXPECT_EQ(text["stdout_in_text"],
            "this text shows the first 500 and the last 500 of the 100008 bytes of stdout "
            "(MCP_EXEC_TEXT_OUTPUT_BYTES=1000); structuredContent.stdout holds all 100008, and "
            "resources/read of mcp-exec://resource/0123/stdout the whole stream as the run wrote "
            "it");
  // Control bytes count as they are escaped: 83 (498 escaped bytes) of each end.
  EXPECT_NE(text["stderr_in_text"].get<std::string>().find("the first 83 and the last 83 of "
                                                           "the 300 bytes of stderr"),
            std::string::npos)
      << text["stderr_in_text"];
  // Everything else is as in structuredContent, the small fields first.
  json rest = text;
  for (const char* k : {"stdout", "stderr", "stdout_in_text", "stderr_in_text"}) rest.erase(k);
  json structured = t["structuredContent"];
  structured.erase("stdout");
  structured.erase("stderr");
  EXPECT_EQ(rest, structured);
  EXPECT_EQ(t["content"][0]["text"].get<std::string>().rfind("{\"exit_code\":0,", 0), 0u);
}

TEST(ExecResultTest, TheTextKeepsAStreamWithinItsBudgetWholeAndCutsOnCharacters) {
  ExecResult r;
  r.stdout_data = std::string(1000, 'a');
  r.stderr_data = "";
  for (int i = 0; i < 500; ++i) r.stderr_data += "\xC3\xA9";  // é, two bytes each
  r.text_output_bytes = 1000;
  json t = ToolResult(r);
  const json text = json::parse(t["content"][0]["text"].get<std::string>());
  EXPECT_EQ(text["stdout"], r.stdout_data) << "exactly the budget is whole";
  EXPECT_FALSE(text.contains("stdout_in_text"));
  r.text_output_bytes = 101;
  t = ToolResult(r);
  const json cut = json::parse(t["content"][0]["text"].get<std::string>());  // valid UTF-8
  const std::string err = cut["stderr"];
  EXPECT_EQ(err.substr(0, 50), r.stderr_data.substr(0, 50));
  EXPECT_EQ(err.substr(err.size() - 50), r.stderr_data.substr(950));
  EXPECT_NE(cut["stderr_in_text"].get<std::string>().find("the first 50 and the last 50 of the "
                                                          "1000 bytes"),
            std::string::npos)
      << cut["stderr_in_text"];
  r.text_output_bytes = 0;  // nothing of either stream in the text
  const json none = json::parse(ToolResult(r)["content"][0]["text"].get<std::string>());
  EXPECT_NE(none["stdout_in_text"].get<std::string>().find("the first 0 and the last 0 of"),
            std::string::npos);
}

TEST(ExecResultTest, ToolErrorHasNoStructuredContent) {
  json e = ToolError("boom");
  EXPECT_EQ(e["isError"], true);
  EXPECT_FALSE(e.contains("structuredContent"));
  EXPECT_EQ(e["content"][0]["text"], "boom");
}

TEST(ExecDescriptionTest, StatesLiveLimitsAndPackages) {
  Config c = TestConfig();
  c.default_timeout_s = 17;
  c.max_timeout_s = 99;
  c.max_output_bytes = 12345;
  RuntimeReport rt = ParseRuntimeReport(json::parse(
      R"({"python":"3.11.2","packages":{"numpy":{"available":true,"version":"1.24.2"},
          "pandas":{"available":false,"error":"x"}},
          "package_order":["numpy","pandas"]})"));
  std::string d = ExecDescription(c, rt, "");
  for (const char* s : {"17 s", "99 s", "12345 bytes", "10 bytes", "numpy 1.24.2", "3.11.2"}) {
    EXPECT_NE(d.find(s), std::string::npos) << s << " in " << d;
  }
  EXPECT_EQ(d.find("pandas"), std::string::npos)
      << "a package that is not importable is not promised";
}

TEST(ExecDescriptionTest, StatesTheMemoryLimitAndTheEffectiveDefault) {
  Config c = TestConfig();
  c.default_timeout_s = 600;  // above the cap: calls get the cap
  c.max_timeout_s = 120;
  c.memory_limit_mb = 384;
  std::string d = ExecDescription(c, RuntimeReport{}, "");
  EXPECT_NE(d.find("defaults to 120 s"), std::string::npos) << d;
  EXPECT_EQ(d.find("600"), std::string::npos) << "a default the model never gets: " << d;
  EXPECT_NE(d.find("memory 384 MiB"), std::string::npos) << d;
}

// Issue 19, point 2: the share a run keeps while others go, with its
// numbers, where the model reads the limits.
TEST(ExecDescriptionTest, SaysTheProcessBoundAndTheShareOfARun) {
  Config c;
  c.max_processes = 64;
  std::string d = ExecDescription(c, RuntimeReport{}, "");
  EXPECT_NE(d.find("processes and threads 64 for all runs together"), std::string::npos) << d;
  EXPECT_NE(d.find("a run holding more than 48 of them beyond its interpreter is ended, reason "
                   "processes"),
            std::string::npos)
      << d;
}

// Issue 21, point 6: clients of 2026-07-28 mirror session in a header, and
// the description states how long a handle lives, with the live numbers.
TEST(ExecSchemaTest, SessionIsMirroredInMcpParamSession) {
  json session = ExecInputSchema()["properties"]["session"];
  EXPECT_EQ(session["x-mcp-header"], "Session");
  EXPECT_EQ(session["type"], "string");
  EXPECT_NE(session["description"].get<std::string>().find("\"new\""), std::string::npos);
}

TEST(ExecDescriptionTest, StatesTheRetentionOfASessionWithTheLiveNumbers) {
  Config c;
  c.py_session_idle_s = 600;
  c.py_session_max_s = 14400;
  std::string d = ExecDescription(c, RuntimeReport{}, "");
  EXPECT_NE(d.find("A session ends after 10 min without a call, 4 h after it started"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("a call with its handle is then a tool error"), std::string::npos) << d;
  c.py_session_idle_s = 90;
  c.py_session_max_s = 3000;
  d = ExecDescription(c, RuntimeReport{}, "");
  EXPECT_NE(d.find("after 90 s without a call, 50 min after it started"), std::string::npos) << d;
}

TEST(ExecSchemaTest, OutputSchemaListsEveryReason) {
  json reason = ExecOutputSchema()["properties"]["reason"];
  std::vector<std::string> all = {"timeout", "memory",    "cpu",      "file_size", "seccomp",
                                  "signal",  "cancelled", "shutdown", "processes"};
  EXPECT_EQ(reason["enum"], json(all));
  for (const auto& r : all) {
    EXPECT_NE(reason["description"].get<std::string>().find(r + " ("), std::string::npos) << r;
  }
}

}  // namespace
}  // namespace mcpexec

namespace mcpexec {
namespace {

// Whether v has the JSON type a schema names ("integer", "string", ...).
bool HasSchemaType(const json& v, const std::string& type) {
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  return false;
}

// Issue 20, point 8: every field a result can carry is in the output
// schema with its type, and the schema promises nothing a result never
// carries. A result with every optional field set, then the six alone.
TEST(ExecSchemaTest, EveryResultFieldIsInTheOutputSchemaAndNoOther) {
  ExecResult r;
  r.stdout_data = "out";
  r.stderr_data = "err";
  r.exit_code = -1;
  r.signal = 9;
  r.end = RunEnd::kSignal;
  r.reason = "signal";
  r.session = "s";
  r.session_new = true;
  r.session_ended = "its interpreter was killed";
  r.session_restarted = "no call for 600 s (MCP_EXEC_PY_SESSION_IDLE_S)";
  r.stdout_lost = r.stderr_lost = true;
  r.stdout_tail = "t";
  r.stderr_tail = "u";
  r.stdout_uri = "mcp-exec://resource/0/stdout.txt";
  r.stderr_uri = "mcp-exec://resource/1/stderr.txt";
  r.stdout_not_kept = "the resource store could not keep it whole: full";
  r.stderr_not_kept = "MCP_EXEC_RESOURCE_STORE_MB is 0: no stream is kept whole";
  r.has_result = r.result_truncated = true;
  r.result = "42";
  r.images.push_back({"", "image/png", "png", "", 0});
  r.images_omitted = 1;
  r.files.push_back({"out/a.csv", "", "a,b\n", "", 0});
  r.files_omitted.push_back({"out/b.bin", 9, "bytes"});
  r.files_omitted_count = 1;
  r.tool_calls = 3;
  r.timeout_note = "timeout_s 1000 is above MCP_EXEC_MAX_TIMEOUT_S (300): the run had 300 s";
  const json full = StructuredResult(r);
  const json props = ExecOutputSchema()["properties"];
  for (const auto& [key, value] : full.items()) {
    ASSERT_TRUE(props.contains(key)) << key << " is carried but not in the schema";
    const json type = props[key]["type"];
    const bool ok = type.is_array()
                        ? std::any_of(type.begin(), type.end(),
                                      [&](const json& t) { return HasSchemaType(value, t); })
                        : HasSchemaType(value, type.get<std::string>());
    EXPECT_TRUE(ok) << key << " = " << value.dump() << " is not " << type.dump();
  }
  for (const auto& [key, schema] : props.items()) {
    EXPECT_TRUE(full.contains(key)) << key << " is in the schema but no result carries it";
  }
  const json bare = StructuredResult(ExecResult{});
  for (const auto& [key, value] : bare.items()) {
    EXPECT_TRUE(props.contains(key)) << key;
  }
  for (const json& key : ExecOutputSchema()["required"]) {
    EXPECT_TRUE(bare.contains(key.get<std::string>()))
        << key << " is required but not always there";
  }
}

}  // namespace
}  // namespace mcpexec
