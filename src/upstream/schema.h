// An upstream tool's input schema, compiled to check the arguments a run
// sends before they leave the server. valijson checks the structure; the
// keywords it would check with std::regex, whose matcher recurses once per
// character of the input (a run's 50 KB string against a "pattern" took the
// supervisor down), are never given to it:
// - "pattern" is matched by RE2, in time linear in the input (a pattern RE2
//   cannot take, with lookaround or backreferences, is left to the upstream);
// - "format" date, time and date-time are checked by a scanner (RFC 3339);
// - "patternProperties" (and the "additionalProperties" beside it, which
//   depends on it) and identifiers long enough to slow valijson's own URI
//   regex are left to the upstream.
// Checking less here is safe: the upstream checks its arguments itself; ours
// only gives the run a clear error before the call leaves.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mcpexec::upstream {

class ArgumentSchema {
 public:
  ~ArgumentSchema();
  ArgumentSchema(const ArgumentSchema&) = delete;
  ArgumentSchema& operator=(const ArgumentSchema&) = delete;

  // Null when the schema cannot be compiled (*why says why). *left_out lists
  // what is left to the upstream (one line each, for the start log).
  static std::unique_ptr<ArgumentSchema> Compile(const nlohmann::json& schema, std::string* why,
                                                 std::vector<std::string>* left_out);

  // "" when arguments fit; else the innermost errors, at most three, "; "
  // between them, each "path: what".
  std::string Check(const nlohmann::json& arguments) const;

 private:
  ArgumentSchema();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// RFC 3339's full-date, full-time and date-time (JSON Schema's "date",
// "time" and "date-time"), checked without a regex: true when s is one.
bool IsRfc3339(const std::string& format, const std::string& s);

}  // namespace mcpexec::upstream
