// JSON from outside the server (a client's message on any transport, a run's
// tool-channel frame or result record, an upstream's answer, a config file)
// is parsed here: its nesting depth is measured on the bytes first, in one
// pass that builds nothing, and input nested deeper than the bound is refused
// before any value exists. The value that comes back can then be copied,
// compared, dumped and validated, all of which recurse once per level.
//
// The parse itself (nlohmann's) and a value's destruction do not recurse;
// copying, dumping, comparing and schema validation do, so an unbounded
// value of 100,000 levels overflowed the supervisor's stack.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace mcpexec::bounded_json {

// Levels of arrays and objects a message may nest (a tool's arguments, a
// result record, an upstream's answer): far more than any real message has,
// few enough that what recurses over a value stays a few frames deep.
inline constexpr int kMaxDepth = 64;

// The deepest nesting of arrays and objects in text, counted outside
// strings; counting stops at stop_at (the result is then stop_at). Exact for
// valid JSON, linear, allocates nothing; for invalid JSON a lower bound that
// the parse then refuses anyway.
int Depth(std::string_view text, int stop_at);

// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json members, as RuntimeReport
struct Parsed {
  nlohmann::json value;  // discarded (is_discarded()) when !ok()
  std::string error;     // "" when parsed; else why not, in plain words
  bool too_deep = false;
  bool ok() const { return error.empty(); }
};

// Parses text, refusing nesting deeper than max_depth (the error names the
// bound) and anything that is not one JSON value.
Parsed Parse(std::string_view text, int max_depth = kMaxDepth);

// The top-level "id" of a message that was refused (too deep, or not JSON
// after the id), when it can be read: a string or an integer, else null.
// Only the top level's scalars are built, so it is safe on any input.
nlohmann::json TopLevelId(std::string_view text);

// The refusal's wording, for callers that check depth themselves.
std::string TooDeepError(int max_depth);

}  // namespace mcpexec::bounded_json
