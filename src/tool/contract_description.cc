// The exec tool's contract: its description and instructions, from the
// configuration and what the runtime reported.
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
#include "tool/contract.h"

namespace mcpexec {

using json = nlohmann::json;

namespace {

// What a call keeps, for the description and the instructions alike.
constexpr const char* kFreshCall =
    "Without session, each call is a fresh process started from a pre-warmed interpreter; "
    "nothing persists between calls.";
constexpr const char* kSessionCall =
    "Pass session: \"new\" to start a live interpreter, then its handle (the result's "
    "session) to keep using it: variables, imports and files persist, so load data once and "
    "explore it over several calls, and a call into a session skips the process start.";

// 600 -> "10 min", 14400 -> "4 h", 90 -> "90 s".
std::string HumanDuration(int64_t s) {
  if (s >= 3600 && s % 3600 == 0) return std::to_string(s / 3600) + " h";
  if (s >= 60 && s % 60 == 0) return std::to_string(s / 60) + " min";
  return std::to_string(s) + " s";
}

}  // namespace

std::string ExecCacheScope(const Config& c) { return c.auth_token.empty() ? "public" : "private"; }

std::string ExecInstructions(const Config& /*c*/) {
  return std::string(
             "Use the exec tool to run Python code: write a complete script, print the "
             "results you need, and read stdout, stderr and exit_code. ") +
         kFreshCall + " " + kSessionCall +
         " A non-zero exit, an exception or a timeout is a normal result, not an error.";
}

namespace {
// What comes back besides stdout, with the live bounds: a part of the
// description.
void DescribeExtras(std::ostream& o, const Config& c) {
  o << " Besides stdout: the value of a last expression comes back as result (as in a "
       "notebook); matplotlib figures (plt.show(), or left open) and display(fig or PIL "
       "image) come back as PNG images (at most "
    << c.max_images << ", each at most " << c.max_image_bytes << " bytes and " << c.max_image_side
    << " px on its longer side, scaled down to fit); files the code writes under out/ (there "
       "before the code runs) come back as resources "
       "(at most "
    << c.max_out_files << " files, embedded while they fit in " << c.max_out_bytes
    << " bytes together";
  if (c.resource_store_mb > 0) {
    o << ", larger ones as resource_link items the client fetches with resources/read (the bytes "
         "never pass through you)";
  }
  o << "); `files` writes input files first (at most " << c.max_in_files << " files, "
    << c.max_in_bytes
    << " bytes together); when output passes the budget, stdout_tail and stderr_tail hold the "
       "last "
    << c.tail_bytes << " bytes";
  if (c.resource_store_mb > 0) {
    o << " and stdout_resource / stderr_resource link the whole stream (kept "
      << HumanDuration(c.resource_ttl_s) << ")";
  }
  o << ". In the result's text content a stream whose JSON text passes " << c.text_output_bytes
    << " bytes shows its head and tail (stdout_in_text / stderr_in_text say how much of it); "
       "structuredContent holds it all.";
}
}  // namespace

std::string ToolsDescription(const Config& c, const std::string& upstream_lines) {
  return " Code mode: in the code, `import mcp_tools` calls other MCP servers' tools (no network "
         "needed; credentials stay outside the sandbox). mcp_tools.SERVER.TOOL(**arguments) "
         "returns the tool's structured result (a dict) when it has one, else its text, else its "
         "content items (images as dicts with bytes); a tool error, a refused tool, bad "
         "arguments or a passed limit raise mcp_tools.ToolError with the reason. "
         "help(mcp_tools.SERVER.TOOL) shows a tool's description, input schema and what it "
         "returns, mcp_tools.search('words') finds tools by name and description, and "
         "mcp_tools.call(SERVER, TOOL, arguments) takes the exact names. Calls overlap: in async "
         "code (async def, or a run using top-level await) a call returns an awaitable, so "
         "`await asyncio.gather(*(mcp_tools.SERVER.TOOL(x=v) for v in values))` fans out, up to " +
         std::to_string(c.max_tool_calls_in_flight) +
         " at a time; outside async code a call returns its value, and calls from threads "
         "overlap too. Loop and aggregate in the code: at most " +
         std::to_string(c.max_tool_calls) +
         " nested calls per exec call (the result's tool_calls counts them), each within the "
         "call's timeout, each result at most " +
         std::to_string(c.max_tool_result_bytes) +
         " bytes. Servers and their tools:" + upstream_lines;
}

std::string ExecDescription(const Config& c, const RuntimeReport& rt,
                            const std::string& sandbox_summary) {
  std::ostringstream o;
  o << "Run Python " << (rt.python_version.empty() ? "3" : rt.python_version)
    << " code and return its stdout, stderr, exit_code, duration_ms, truncated and timed_out. "
    << kFreshCall
    << " The code runs as __main__ in a private, writable working directory that is removed "
       "afterwards. Print what you want back.";
  o << " Importable packages besides the standard library: ";
  if (rt.packages.empty()) o << "none";
  for (size_t i = 0; i < rt.packages.size(); ++i) {
    o << (i ? ", " : "") << rt.packages[i].first << " " << rt.packages[i].second;
  }
  for (const auto& [name, version] : rt.preloaded) {
    o << ", " << name << (version.empty() ? "" : " " + version);
  }
  o << " (already imported: importing them is instant; matplotlib uses the Agg backend and "
       "plt.show() returns the figures as images).";
  if (!rt.extras.empty()) {
    o << " Also installed, imported on first use:";
    for (size_t i = 0; i < rt.extras.size(); ++i) {
      o << (i ? ", " : " ") << rt.extras[i].first << " " << rt.extras[i].second;
    }
    o << ".";
  }
  // The numbers a call really gets: a default above the cap is the cap.
  o << " Limits: timeout_s defaults to " << ClampTimeout(std::nullopt, c) << " s and is capped at "
    << c.max_timeout_s << " s; memory " << c.memory_limit_mb
    << " MiB (past it: MemoryError, reason memory); files in the working directory "
    << c.disk_limit_mb << " MiB; stdout and stderr share one budget of " << c.max_output_bytes
    << " bytes (the rest is dropped and truncated is true); stdin at most " << c.max_stdin_bytes
    << " bytes; code at most " << c.max_code_bytes << " bytes; processes and threads "
    << c.max_processes << " for all runs together (while other runs go, a run holding more than "
    << RunsHeldBound(c.max_processes)
    << " of them beyond its interpreter is ended, reason processes).";
  DescribeExtras(o, c);
  o << " " << kSessionCall << " A session ends after " << HumanDuration(c.py_session_idle_s)
    << " without a call, " << HumanDuration(c.py_session_max_s)
    << " after it started, when its interpreter dies (a crash, a timeout the code ignores), "
       "when the server, holding its most sessions, needs room for a new one and it is the one "
       "idle the longest, when the server restarts, or at once when a call passes end: true "
       "(ending it when done frees its memory for others); a call with its handle is then a tool "
       "error "
       "saying so: start "
       "a new one with \"new\" and rebuild its state (a session a 2025 client named starts "
       "afresh instead, and the result says session_new true and, in session_restarted, why the "
       "one before ended). A timeout or cancel in a session "
       "raises KeyboardInterrupt and keeps the state. A session is one principal's state: code run "
       "in "
       "it can change what its later calls do and return, so call with reset after running "
       "code or data you do not trust.";
  const nlohmann::json mounts = rt.sandbox.is_object()
                                    ? rt.sandbox.value("mounts", nlohmann::json::array())
                                    : nlohmann::json::array();
  if (!mounts.empty()) {
    o << " The user's folders, the same in every run and session:";
    for (size_t i = 0; i < mounts.size(); ++i) {
      const nlohmann::json& m = mounts[i];
      const bool rw = m.value("mode", "ro") == "rw";
      o << (i ? "; `" : " `") << m.value("path", "") << "` (" << (rw ? "read-write" : "read-only")
        << (m.value("exec", false) ? ", executable" : "") << "): the user's files"
        << (rw ? ", and what you write there lands on the user's disk (each file at most " +
                     std::to_string(c.disk_limit_mb) + " MiB)"
               : "");
    }
    o << ". Read the user's data from them instead of passing it in `files`.";
  }
  if (!sandbox_summary.empty()) o << " " << sandbox_summary;
  o << " A non-zero exit, an exception or a timeout is a normal result, not an error.";
  return o.str();
}

}  // namespace mcpexec
