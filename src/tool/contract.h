// The `exec` tool: schemas, description, argument validation in the order of
// the contract, and the shape of results. Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "model/config.h"
#include "resources/contents.h"
#include "supervisor/run.h"

namespace mcpexec {

struct ExecRequest {
  std::string code;
  std::string stdin_data;
  int64_t timeout_s = 0;  // already defaulted and clamped
  // When timeout_s is not the number the call gave (clamped to 1 or to the
  // max): what was given and what applies, in plain words; else "".
  std::string timeout_note;
  // `files`: relative path -> content (decoded), checked.
  std::vector<std::pair<std::string, std::string>> files;
  // `session`: run in the live interpreter of this name (checked: 1-64 of
  // A-Za-z0-9._-); empty: a one-shot run. `reset`: start it afresh first.
  std::string session;
  bool reset = false;
  // `end`: the session ends once this call is answered (its interpreter
  // exits; a handle is no longer valid).
  bool end = false;
};

// The tool's result: the run's outcome (supervisor/run.h: streams, exit,
// tails, images, files, result), with the contract's names for how it ended.
struct ExecResult : RunOutcome {
  bool timed_out = false;
  std::string reason;  // "", "timeout", "signal", "cancelled", ... (RunEndName)
  // A session call's: its name, whether this call started its interpreter,
  // and why the interpreter is gone after this call ("" while it lives).
  std::string session;
  bool session_new = false;
  std::string session_ended;
  std::string session_restarted;  // SessionPool::CellOutcome::restarted
  std::string timeout_note;       // ExecRequest::timeout_note
  // MCP_EXEC_MAX_OUTPUT_BYTES: a stream whose escaped form passes twice this
  // is cut in the answer (control bytes escape six-fold); below it, every
  // byte comes back.
  int64_t output_cap = 1 << 20;
  // MCP_EXEC_TEXT_OUTPUT_BYTES: each stream's share of the text item.
  int64_t text_output_bytes = 32768;
};

// A valid session name: 1-64 characters of A-Za-z0-9._-
bool IsValidSessionName(const std::string& name);

// The file:/// URI of an out/ file: every byte of the path but the
// unreserved ones and the slashes percent-encoded (RFC 3986).
std::string FileUri(const std::string& path);

const char* ExecToolName();
// Every value the result's `reason` can take.
const std::vector<std::string>& ExecReasons();
nlohmann::json ExecInputSchema();
nlohmann::json ExecOutputSchema();
// c: the live limits; rt: what the zygote reported.
std::string ExecDescription(const Config& c, const RuntimeReport& rt,
                            const std::string& sandbox_summary);
// Code mode: the description's paragraph on mcp_tools, ending with the
// upstreams' lines (upstream::Upstreams::Summary).
std::string ToolsDescription(const Config& c, const std::string& upstream_lines);
// The initialize instructions: how to use the tool, in the description's own
// sentences on what a call keeps (one source, so the two cannot disagree).
std::string ExecInstructions(const Config& c);
// Who may share cached lists and discover results (cacheScope): with a
// token, what a client caches came with its credential.
std::string ExecCacheScope(const Config& c);

// Returns the request, or the tool-error message.
std::variant<ExecRequest, std::string> ValidateExecArguments(const nlohmann::json& args,
                                                             const Config& c);

// `files` of a call: each path checked, each content decoded, within the
// count and byte caps; the tool-error message names the path.
std::optional<std::string> ValidateFiles(const nlohmann::json& files, const Config& c,
                                         std::vector<std::pair<std::string, std::string>>* out);

// Timeout rule 4 of the contract, on a value already known to be an integer.
int64_t ClampTimeout(std::optional<int64_t> requested, const Config& config);

// Python's fatal-error report (a crash: faulthandler's "Fatal Python
// error:" block) without what only adds noise for the reader: the frames of
// the server's own runtime and the "Extension modules: ..." list (about
// 1.5 KB). Everything before the report, and the code's own frames, stay.
std::string TidyCrashReport(const std::string& text);

nlohmann::json StructuredResult(const ExecResult& r);
// The result's text item: StructuredResult's JSON, small fields first, then
// the tails, then stdout and stderr (clients cut long text from the end),
// each cut to its head and tail when its escaped form passes text_budget
// bytes, with STREAM_in_text saying what is shown of how many bytes.
std::string ResultText(const nlohmann::json& structured, int64_t text_budget);
nlohmann::json ToolResult(const ExecResult& r);        // CallToolResult, isError false
nlohmann::json ToolError(const std::string& message);  // CallToolResult, isError true

}  // namespace mcpexec
