// The exec tool's contract, part 1 of 4: its name, reasons and schemas
// (contract_description.cc, contract_validation.cc and contract_result.cc
// hold the rest; contract.h is the one interface).
#include "tool/contract.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "base/base64.h"
#include "base/fs_util.h"
#include "base/utf8.h"
#include "model/run_limits.h"
#include "protocol/mcp_session.h"
#include "supervisor/results.h"

namespace mcpexec {

using json = nlohmann::json;

const char* ExecToolName() { return "exec"; }

const std::vector<std::string>& ExecReasons() {
  static const std::vector<std::string> kReasons = [] {
    std::vector<std::string> names;
    for (RunEnd end : AbnormalRunEnds()) names.emplace_back(RunEndName(end));
    return names;
  }();
  return kReasons;
}

namespace {

json FilesSchema() {
  json base64 = {{"type", "object"},
                 {"properties", {{"base64", {{"type", "string"}}}}},
                 {"required", {"base64"}},
                 {"additionalProperties", false}};
  json content = {{"anyOf", json::array({{{"type", "string"}}, base64})}};
  return {{"type", "object"},
          {"description",
           "files written into the working directory before the code runs: relative path "
           "(subfolders are created) -> content, a string (UTF-8 text) or {\"base64\": \"...\"}"},
          {"additionalProperties", content}};
}

}  // namespace

json ExecInputSchema() {
  return {
      {"type", "object"},
      {"properties",
       {{"code", {{"type", "string"}, {"description", "Python source, run as __main__"}}},
        {"timeout_s",
         {{"type", "integer"},
          {"description",
           "wall-clock timeout in seconds (0 or absent: the default; "
           "clamped to 1..max)"}}},
        {"stdin", {{"type", "string"}, {"description", "text fed to the program's stdin"}}},
        {"files", FilesSchema()},
        {"session",
         {{"type", "string"},
          {"pattern", "^[A-Za-z0-9._-]{1,64}$"},
          // Clients of protocol 2026-07-28 mirror it in Mcp-Param-Session
          // (what an ingress can route a session's calls on).
          {"x-mcp-header", "Session"},
          {"description",
           "\"new\" starts a live Python session, and the result's session is its handle: "
           "pass the handle back to run in the same interpreter (globals, imports and files "
           "in the working directory persist), from any connection. Clients of protocol 2025 "
           "may instead name a session (created on first use, kept for that connection only). "
           "Omit for a fresh process"}}},
        {"reset",
         {{"type", "boolean"},
          {"description",
           "with session: end that session's interpreter and start it afresh (the same "
           "handle) before running"}}},
        {"end",
         {{"type", "boolean"},
          {"description",
           "with session: end that session once this call's code has run, freeing its "
           "memory and processes at once (code \"pass\" ends it without running anything); "
           "its handle is then no longer valid"}}}}},
      {"required", {"code"}},
      {"additionalProperties", false},
  };
}

namespace {

json FilesOmittedSchema() {
  return {{"type", "array"},
          {"items",
           {{"type", "object"},
            {"properties",
             {{"path", {{"type", "string"}}},
              {"bytes", {{"type", "integer"}}},
              {"why", {{"type", "string"}, {"enum", kOmittedWhy}}}}}}},
          {"description",
           "out/ files not returned: past MCP_EXEC_MAX_OUT_FILES (count) or "
           "MCP_EXEC_MAX_OUT_BYTES (bytes), a name that is not UTF-8 or holds control or bidi "
           "characters (name; the path shows them as \\xNN or \\uNNNN), no permission to "
           "read (unreadable), a symbolic link, pipe or socket (not_a_file: links are not "
           "followed); at most 100 listed"}};
}

}  // namespace

namespace {
// The output schema's fields of a stream that lost bytes.
json StreamExtrasSchema() {
  return {
      {"stdout_tail",
       {{"type", "string"},
        {"description",
         "present when stdout lost bytes to the shared budget: its last bytes "
         "(MCP_EXEC_TAIL_BYTES), where the error or the final answer usually is; also when "
         "stdout was cut because it would more than double once JSON-escaped (control bytes)"}}},
      {"stderr_tail",
       {{"type", "string"},
        {"description", "present when stderr lost bytes to the shared budget: its last bytes"}}},
      {"stdout_resource",
       {{"type", "string"},
        {"description",
         "present when stdout lost bytes to the shared budget: the URI of the whole stream "
         "(also a resource_link item), for resources/read until MCP_EXEC_RESOURCE_TTL_S "
         "passes"}}},
      {"stderr_resource",
       {{"type", "string"}, {"description", "the same for stderr: the URI of the whole stream"}}},
      {"stdout_not_kept",
       {{"type", "string"},
        {"description",
         "present when stdout lost bytes to the shared budget but its whole could not be kept "
         "as a resource: why (the resource store's bound or its filesystem's free space)"}}},
      {"stderr_not_kept", {{"type", "string"}, {"description", "the same for stderr"}}}};
}

// The session fields of a result (a call with `session`).
json SessionSchema() {
  return {{"session",
           {{"type", "string"},
            {"description",
             "the session this call ran in: its handle (pass it back as session to keep using "
             "it), or the name a 2025 client gave"}}},
          {"session_new",
           {{"type", "boolean"},
            {"description",
             "true when this call started the session's interpreter: any state an earlier call "
             "left is gone"}}},
          {"session_ended",
           {{"type", "string"},
            {"description",
             "present when the session's interpreter is gone after this call, with why; the next "
             "call with this name starts a new one"}}},
          {"session_restarted",
           {{"type", "string"},
            {"description",
             "present when a session a 2025 client named was started afresh by this call because "
             "the one before ended: why it ended. Names the earlier calls defined are gone (a "
             "NameError here is why)"}}}};
}

}  // namespace

json ExecOutputSchema() {
  json schema = {
      {"type", "object"},
      {"properties",
       {{"stdout", {{"type", "string"}}},
        {"stderr", {{"type", "string"}}},
        {"exit_code", {{"type", "integer"}, {"description", "0-255, or -1 on timeout or signal"}}},
        {"duration_ms", {{"type", "integer"}}},
        {"truncated", {{"type", "boolean"}}},
        {"timed_out", {{"type", "boolean"}}},
        {"signal", {{"type", "integer"}, {"description", "signal that ended the run, if any"}}},
        {"reason",
         {{"type", "string"},
          {"enum", ExecReasons()},
          {"description",
           "present when the run ended abnormally: timeout (the wall-clock deadline passed; the "
           "whole process tree was killed), memory (the memory limit was hit: an uncaught "
           "MemoryError or the run killed for memory), cpu (the CPU-time limit, SIGXCPU), "
           "file_size (a file grew past the disk limit: SIGXFSZ, or Python's uncaught OSError "
           "EFBIG), seccomp (a forbidden system "
           "call, SIGSYS), signal (another signal; see signal), cancelled (the client cancelled "
           "the call), shutdown (the server stopped during the run; the output so far is kept), "
           "processes (while other runs were going, all runs together held more than three "
           "quarters of the process budget, and this run held the most, so it was ended)"}}},
        {"timeout_note",
         {{"type", "string"},
          {"description",
           "present when timeout_s was not used as given (below 1, or above the server's max): "
           "what was given and what the run had"}}},
        {"queue_ms",
         {{"type", "integer"},
          {"description", "time spent waiting for a slot (and for the session's earlier calls)"}}},
        {"tool_calls",
         {{"type", "integer"},
          {"description",
           "code mode (a server with upstreams): how many nested calls this run made to "
           "mcp_tools, refused ones included, at most MCP_EXEC_MAX_TOOL_CALLS"}}},
        {"result",
         {{"type", "string"},
          {"description",
           "repr of the code's last expression when it is not None, as a notebook cell shows "
           "it (a figure or image there is returned as an image instead)"}}},
        {"result_truncated",
         {{"type", "boolean"}, {"description", "result was cut at MCP_EXEC_MAX_RESULT_BYTES"}}},
        {"images",
         {{"type", "integer"},
          {"description",
           "image content items returned after the text item (plt.show(), display(), figures "
           "open at the end), in the order shown"}}},
        {"images_omitted",
         {{"type", "integer"},
          {"description",
           "images left out: past MCP_EXEC_MAX_IMAGES, too big even scaled, not a PNG of 1 to "
           "MCP_EXEC_MAX_IMAGE_SIDE px a side, or a figure that could not be drawn"}}},
        {"files",
         {{"type", "array"},
          {"items", {{"type", "string"}}},
          {"description",
           "paths of the out/ files returned: embedded resources (uri file:///out/...) while "
           "they fit in MCP_EXEC_MAX_OUT_BYTES together, the rest as resource_link items (uri "
           "mcp-exec://resource/..., for resources/read until MCP_EXEC_RESOURCE_TTL_S passes)"}}},
        {"files_omitted", FilesOmittedSchema()},
        {"files_omitted_count",
         {{"type", "integer"}, {"description", "how many out/ files were not returned"}}}}},
      {"required", {"stdout", "stderr", "exit_code", "duration_ms", "truncated", "timed_out"}},
  };
  // Kept alive: items() refers to them.
  for (const json& more : {StreamExtrasSchema(), SessionSchema()}) {
    for (const auto& [key, value] : more.items()) schema["properties"][key] = value;
  }
  return schema;
}

}  // namespace mcpexec
