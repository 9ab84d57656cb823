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
#include "base/run_limits.h"
#include "base/utf8.h"
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
         "help(mcp_tools.SERVER.TOOL) shows a tool's description and input schema, "
         "mcp_tools.call(SERVER, TOOL, arguments) takes the exact names, and calls may come from "
         "threads. Loop and aggregate in the code: at most " +
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

namespace {

// Go's unicode.IsSpace, which the reference's strings.TrimSpace uses.
bool IsUnicodeSpace(uint32_t c) {
  switch (c) {
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case ' ':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

// True when s is nothing but Unicode white space (an invalid byte is not).
bool IsBlank(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    uint32_t c;
    size_t len;
    if (b < 0x80) {
      c = b, len = 1;
    } else if ((b & 0xE0) == 0xC0) {
      c = b & 0x1F, len = 2;
    } else if ((b & 0xF0) == 0xE0) {
      c = b & 0x0F, len = 3;
    } else {
      return false;  // 4-byte sequences hold no space; anything else is invalid
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      auto cb = static_cast<unsigned char>(s[i + k]);
      if ((cb & 0xC0) != 0x80) return false;
      c = (c << 6) | (cb & 0x3F);
    }
    if (!IsUnicodeSpace(c)) return false;
    i += len;
  }
  return true;
}

// An integer, or an integer-valued float (5.0). Out-of-range values saturate:
// they are clamped anyway.
std::optional<int64_t> AsInteger(const json& v) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                 ? std::numeric_limits<int64_t>::max()
                 : static_cast<int64_t>(u);
    }
    return v.get<int64_t>();
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d) return std::nullopt;
    if (d >= 9.2e18) return std::numeric_limits<int64_t>::max();
    if (d <= -9.2e18) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

}  // namespace

int64_t ClampTimeout(std::optional<int64_t> requested, const Config& c) {
  int64_t t = (!requested || *requested == 0) ? c.default_timeout_s : *requested;
  if (t < 1) t = 1;
  if (t > c.max_timeout_s) t = c.max_timeout_s;
  return t;
}

namespace {

// A path of `files`, with the message naming it.
std::optional<std::string> CheckInputPath(const std::string& path) {
  if (path.empty()) return std::string("files: an empty path");
  if (path == "~" || path.rfind("~/", 0) == 0) {
    return "files: \"" + RepairUtf8(path) +
           "\" starts with ~, which is not expanded: a path is relative to the run's working "
           "directory (write \"" +
           RepairUtf8(path.substr(path.size() > 1 ? 2 : 1)) + "\" for a file there)";
  }
  if (auto problem = RelativePathProblem(path)) {
    return "files: \"" + RepairUtf8(path) + "\" " + *problem;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> ValidateFiles(const json& files, const Config& c,
                                         std::vector<std::pair<std::string, std::string>>* out) {
  if (!files.is_object()) {
    return std::string("files must be an object of path -> content, not ") + files.type_name();
  }
  if (static_cast<int64_t>(files.size()) > c.max_in_files) {
    return "files has " + std::to_string(files.size()) + " entries; the limit is " +
           std::to_string(c.max_in_files) + " (MCP_EXEC_MAX_IN_FILES)";
  }
  int64_t total = 0;
  std::set<std::string> paths;
  for (auto it = files.begin(); it != files.end(); ++it) {
    // "./a" is "a", as a shell would have it.
    std::string path = it.key();
    while (path.rfind("./", 0) == 0 && path.size() > 2) path.erase(0, 2);
    if (auto err = CheckInputPath(path)) return err;
    if (!paths.insert(path).second) {
      return "files: \"" + RepairUtf8(it.key()) + "\" names the same file as another key (\"" +
             RepairUtf8(path) + "\")";
    }
    const std::string quoted = "files: \"" + path + "\" ";
    std::string data;
    if (it->is_string()) {
      data = it->get<std::string>();
    } else if (it->is_object() && it->size() == 1 && it->contains("base64") &&
               (*it)["base64"].is_string()) {
      auto decoded = Base64Decode((*it)["base64"].get<std::string>());
      if (!decoded) return quoted + "is not valid base64 (standard alphabet, padded, no spaces)";
      data = std::move(*decoded);
    } else {
      return quoted + "must be a string or {\"base64\": \"...\"}, not " +
             (it->is_object() ? std::string("another object") : it->type_name());
    }
    total += static_cast<int64_t>(data.size());
    if (total > c.max_in_bytes) {
      return quoted + "passes the limit of " + std::to_string(c.max_in_bytes) +
             " bytes for all files together (MCP_EXEC_MAX_IN_BYTES)";
    }
    out->emplace_back(path, std::move(data));
  }
  // A file cannot also be a folder of another.
  for (const auto& [path, data] : *out) {
    for (size_t slash = path.find('/'); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      const std::string folder = path.substr(0, slash);
      if (paths.count(folder)) {
        return "files: \"" + folder + "\" is a file and also a folder of \"" + path + "\"";
      }
    }
  }
  return std::nullopt;
}

bool IsValidSessionName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char ch : name) {
    bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

namespace {

// `session`, `reset` and `end` of a call.
std::optional<std::string> ValidateSession(const json& a, ExecRequest* req) {
  if (auto it = a.find("session"); it != a.end() && !it->is_null()) {
    if (!it->is_string()) return std::string("session must be a string, not ") + it->type_name();
    req->session = it->get<std::string>();
    if (!IsValidSessionName(req->session)) {
      return "session " + json(req->session).dump() +
             " is not a valid name: use 1-64 characters of A-Z a-z 0-9 . _ -";
    }
  }
  if (auto it = a.find("reset"); it != a.end() && !it->is_null()) {
    if (!it->is_boolean()) return std::string("reset must be a boolean, not ") + it->type_name();
    req->reset = it->get<bool>();
    if (req->reset && req->session.empty()) {
      return std::string("reset needs a session: name the session to start afresh");
    }
  }
  if (auto it = a.find("end"); it != a.end() && !it->is_null()) {
    if (!it->is_boolean()) return std::string("end must be a boolean, not ") + it->type_name();
    req->end = it->get<bool>();
    if (req->end && req->session.empty()) {
      return std::string(
          "end needs a session: name the session to end (a run without one ends "
          "by itself)");
    }
  }
  return std::nullopt;
}

constexpr const char* kAccepted = "code, timeout_s, stdin, files, session, reset, end";

// The arguments exec does not take, in the object's order.
std::vector<std::string> UnknownArguments(const json& a) {
  std::vector<std::string> names;
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (it.key() != "code" && it.key() != "timeout_s" && it.key() != "stdin" &&
        it.key() != "files" && it.key() != "session" && it.key() != "reset" && it.key() != "end") {
      names.push_back(it.key());
    }
  }
  return names;
}

// A call without code: the contract's message; beside unknown arguments
// ({"script": ...}) it goes on to name them (the contract lets a missing
// code say so in its own words).
std::string MissingCode(const json& a) {
  const std::vector<std::string> names = UnknownArguments(a);
  if (names.empty()) return "code must not be empty";
  std::string listed;
  for (size_t i = 0; i < names.size() && i < 5; ++i) listed += (i ? ", " : "") + names[i];
  if (names.size() > 5) listed += " and " + std::to_string(names.size() - 5) + " more";
  return "code must not be empty: the required argument code is missing, and " + listed +
         (names.size() == 1 ? " is not an argument" : " are not arguments") +
         " of exec (accepted: " + kAccepted + "); pass the Python source as code";
}

}  // namespace

std::variant<ExecRequest, std::string> ValidateExecArguments(const json& args, const Config& c) {
  static const json kEmpty = json::object();
  const json& a = args.is_object() ? args : kEmpty;
  // 1. code
  // The contract's message, exactly, for a missing or blank code; a wrong
  // type says what came instead (the same message first).
  auto code_it = a.find("code");
  if (code_it != a.end() && !code_it->is_string()) {
    return std::string("code must not be empty: it must be a string of Python source, not ") +
           (code_it->is_null() ? "null" : std::string("a ") + code_it->type_name());
  }
  if (code_it == a.end()) return MissingCode(a);
  if (IsBlank(code_it->get_ref<const std::string&>())) {
    return std::string("code must not be empty");
  }
  // 2. unknown arguments, then types
  if (const std::vector<std::string> names = UnknownArguments(a); !names.empty()) {
    return "unknown argument: " + names.front() + " (accepted: " + kAccepted + ")";
  }
  std::optional<int64_t> timeout;
  // null is a wrong type like any other (the reference's decoder refuses it).
  if (auto it = a.find("timeout_s"); it != a.end()) {
    timeout = it->is_null() ? std::nullopt : AsInteger(*it);
    if (!timeout) {
      return std::string("timeout_s must be an integer number of seconds, not ") + it->type_name();
    }
  }
  ExecRequest req;
  if (auto it = a.find("stdin"); it != a.end()) {
    if (!it->is_string()) return std::string("stdin must be a string, not ") + it->type_name();
    req.stdin_data = it->get<std::string>();
  }
  // 3. sizes, in UTF-8 bytes
  if (static_cast<int64_t>(req.stdin_data.size()) > c.max_stdin_bytes) {
    return "stdin exceeds limit of " + std::to_string(c.max_stdin_bytes) +
           " bytes (MCP_EXEC_MAX_STDIN_BYTES): it is " + std::to_string(req.stdin_data.size()) +
           " bytes in UTF-8; pass large data in files instead, or raise the limit";
  }
  req.code = code_it->get<std::string>();
  // A UTF-8 byte-order mark (editors on Windows write one) is not code:
  // python3 skips it in a file, and so do we.
  if (req.code.rfind("\xEF\xBB\xBF", 0) == 0) req.code.erase(0, 3);
  if (static_cast<int64_t>(req.code.size()) > c.max_code_bytes) {
    return "code exceeds limit of " + std::to_string(c.max_code_bytes) +
           " bytes (MCP_EXEC_MAX_CODE_BYTES): it is " + std::to_string(req.code.size()) +
           " bytes in UTF-8; put data in files or stdin instead of the code, or raise the limit";
  }
  // 4. timeout: never rejected
  req.timeout_s = ClampTimeout(timeout, c);
  if (timeout && *timeout != 0 && *timeout != req.timeout_s) {
    // The number as sent (a huge one saturated in *timeout).
    req.timeout_note = "timeout_s " + a["timeout_s"].dump() +
                       (*timeout < 1 ? " is below 1"
                                     : " is above MCP_EXEC_MAX_TIMEOUT_S (" +
                                           std::to_string(c.max_timeout_s) + ")") +
                       ": the run had " + std::to_string(req.timeout_s) + " s";
  }
  // Ours: the input files.
  if (auto it = a.find("files"); it != a.end()) {
    if (auto err = ValidateFiles(*it, c, &req.files)) return *err;
  }
  if (auto err = ValidateSession(a, &req)) return *err;
  return req;
}

namespace {

// The bytes of a character of s as a JSON string holds it (nlohmann's
// escaping): two for \" \\ \b \f \n \r \t, six for other control bytes.
size_t EscapedBytes(unsigned char ch) {
  if (ch == '"' || ch == '\\' || ch == '\b' || ch == '\f' || ch == '\n' || ch == '\r' ||
      ch == '\t') {
    return 2;
  }
  return ch < 0x20 ? 6 : 1;
}

// A stream as the answer carries it: valid UTF-8, and never more than twice
// the output cap once escaped. Control bytes escape six-fold, and the answer
// holds each stream twice (structuredContent and its JSON in the text item,
// escaped again): 1 MiB of them made 13 MB of answer. Past the bound the
// stream is cut (on a character boundary) and *tail gets its last 4 KiB.
// The bound is the cap's, not the stream's own size: a few bytes with a
// control character among them come back whole.
std::string AnswerText(const std::string& raw, int64_t cap, std::optional<std::string>* tail) {
  std::string text = RepairUtf8(raw);
  const size_t budget =
      2 * std::max<size_t>(text.size(), static_cast<size_t>(std::max<int64_t>(cap, 0)));
  size_t escaped = 0, keep = 0;
  for (; keep < text.size(); ++keep) {
    escaped += EscapedBytes(static_cast<unsigned char>(text[keep]));
    if (escaped > budget) break;
  }
  if (keep == text.size()) return text;
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  *tail = std::string(Utf8Tail(text, 4096));
  text.resize(keep);
  return text;
}

}  // namespace

std::string TidyCrashReport(const std::string& text) {
  const size_t fatal = text.rfind("Fatal Python error: ");
  if (fatal == std::string::npos) return text;
  std::string out = text.substr(0, fatal);
  size_t at = fatal;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string_view line(text.data() + at, end - at);
    const bool runtime_frame = line.find("  File \"<mcp_exec_runtime>\"") == 0;
    const bool module_list = line.rfind("Extension modules: ", 0) == 0;
    if (!runtime_frame && !module_list) out.append(line);
    at = end;
  }
  return out;
}

json StructuredResult(const ExecResult& r) {
  std::optional<std::string> stdout_cut, stderr_cut;  // their tails, when cut
  json j = {
      {"stdout", AnswerText(r.stdout_data, r.output_cap, &stdout_cut)},
      {"stderr", AnswerText(r.signal ? TidyCrashReport(r.stderr_data) : r.stderr_data, r.output_cap,
                            &stderr_cut)},
      {"exit_code", r.exit_code},
      {"duration_ms", r.duration_ms},
      {"truncated", r.truncated},
      {"timed_out", r.timed_out},
      {"queue_ms", r.queue_ms},
  };
  if (r.signal) j["signal"] = r.signal;
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (!r.timeout_note.empty()) j["timeout_note"] = r.timeout_note;
  if (r.tool_calls >= 0) j["tool_calls"] = r.tool_calls;
  if (!r.session.empty()) {
    j["session"] = r.session;
    j["session_new"] = r.session_new;
    if (!r.session_ended.empty()) j["session_ended"] = r.session_ended;
    if (!r.session_restarted.empty()) j["session_restarted"] = r.session_restarted;
  }
  // A tail is the stream's last bytes (at most MCP_EXEC_TAIL_BYTES): kept
  // as they are, it is small whatever its escaping.
  if (r.stdout_lost) j["stdout_tail"] = RepairUtf8(r.stdout_tail);
  if (r.stderr_lost) {
    j["stderr_tail"] = RepairUtf8(r.signal ? TidyCrashReport(r.stderr_tail) : r.stderr_tail);
  }
  if (stdout_cut && !r.stdout_lost) j["stdout_tail"] = *stdout_cut;
  if (stderr_cut && !r.stderr_lost) j["stderr_tail"] = *stderr_cut;
  if (stdout_cut || stderr_cut) j["truncated"] = true;
  if (!r.stdout_uri.empty()) j["stdout_resource"] = r.stdout_uri;
  if (!r.stderr_uri.empty()) j["stderr_resource"] = r.stderr_uri;
  if (!r.stdout_not_kept.empty()) j["stdout_not_kept"] = r.stdout_not_kept;
  if (!r.stderr_not_kept.empty()) j["stderr_not_kept"] = r.stderr_not_kept;
  if (r.has_result) {
    j["result"] = RepairUtf8(r.result);
    if (r.result_truncated) j["result_truncated"] = true;
  }
  if (!r.images.empty() || r.images_omitted > 0) {
    j["images"] = r.images.size();
    j["images_omitted"] = r.images_omitted;
  }
  if (!r.files.empty() || r.files_omitted_count > 0) {
    json names = json::array();
    for (const RunArtifact& f : r.files) names.push_back(f.name);
    j["files"] = names;
    json omitted = json::array();
    for (const OmittedFile& f : r.files_omitted) {
      omitted.push_back({{"path", f.path}, {"bytes", f.bytes}, {"why", f.why}});
    }
    j["files_omitted"] = omitted;
    // The list names at most 100; the count is all of them.
    j["files_omitted_count"] = std::max<int64_t>(r.files_omitted_count, omitted.size());
  }
  return j;
}

std::string MimeTypeForPath(const std::string& path) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".csv", "text/csv"},
      {".tsv", "text/tab-separated-values"},
      {".txt", "text/plain"},
      {".log", "text/plain"},
      {".md", "text/markdown"},
      {".html", "text/html"},
      {".htm", "text/html"},
      {".css", "text/css"},
      {".js", "text/javascript"},
      {".py", "text/x-python"},
      {".json", "application/json"},
      {".jsonl", "application/jsonl"},
      {".xml", "application/xml"},
      {".yaml", "application/yaml"},
      {".yml", "application/yaml"},
      {".toml", "application/toml"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".webp", "image/webp"},
      {".pdf", "application/pdf"},
      {".zip", "application/zip"},
      {".gz", "application/gzip"},
      {".parquet", "application/vnd.apache.parquet"},
      {".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
  };
  std::string lower = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const auto& [ext, type] : kTypes) {
    size_t n = strlen(ext);
    if (lower.size() > n && lower.compare(lower.size() - n, n, ext) == 0) return type;
  }
  return "application/octet-stream";
}

std::string FileUri(const std::string& path) { return "file:///" + UriPathEscape(path); }

namespace {
// Text where it costs no more than base64 would: a file of control bytes
// would escape six-fold.
bool CheapAsText(const std::string& data) {
  size_t escaped = 0;
  for (unsigned char ch : data) escaped += EscapedBytes(ch);
  return escaped <= data.size() / 3 * 4 + 4 && IsValidUtf8(data);
}
}  // namespace

int64_t ResourceParts(int64_t size) {
  return std::max<int64_t>(1, (size + kResourcePartBytes - 1) / kResourcePartBytes);
}

std::string ResourcePartUri(const std::string& uri, int64_t part) {
  return uri + "?part=" + std::to_string(part);
}

json ResourceContentsItem(const std::string& uri, const std::string& mime,
                          const std::string& data) {
  json item = {{"uri", uri}, {"mimeType", mime}};
  if (CheapAsText(data)) {
    item["text"] = data;
  } else {
    item["blob"] = Base64Encode(data);
  }
  return item;
}

namespace {

// A stream as the text item shows it: whole while its escaped form fits in
// budget bytes, else its head and tail (about half the budget each, on
// character boundaries) around a line saying how much is left out; *note
// then says what is shown, of how many bytes, and where the whole is.
std::string TextOfStream(const std::string& key, const std::string& stream, size_t budget,
                         const json& structured, std::string* note) {
  size_t escaped = 0;
  for (unsigned char ch : stream) escaped += EscapedBytes(ch);
  if (escaped <= budget) return stream;
  size_t head = 0, spent = 0;
  while (head < stream.size() && spent + EscapedBytes(stream[head]) <= budget / 2) {
    spent += EscapedBytes(static_cast<unsigned char>(stream[head++]));
  }
  while (head > 0 && head < stream.size() &&
         (static_cast<unsigned char>(stream[head]) & 0xC0) == 0x80) {
    --head;
  }
  size_t tail = stream.size();
  spent = 0;
  while (tail > head && spent + EscapedBytes(stream[tail - 1]) <= budget - budget / 2) {
    spent += EscapedBytes(static_cast<unsigned char>(stream[--tail]));
  }
  while (tail < stream.size() && (static_cast<unsigned char>(stream[tail]) & 0xC0) == 0x80) {
    ++tail;
  }
  const size_t left_out = tail - head;
  *note = "this text shows the first " + std::to_string(head) + " and the last " +
          std::to_string(stream.size() - tail) + " of the " + std::to_string(stream.size()) +
          " bytes of " + key + " (MCP_EXEC_TEXT_OUTPUT_BYTES=" + std::to_string(budget) +
          "); structuredContent." + key + " holds all " + std::to_string(stream.size());
  if (auto uri = structured.find(key + "_resource"); uri != structured.end()) {
    *note += ", and resources/read of " + uri->get<std::string>() +
             " the whole stream as the run wrote it";
  }
  return stream.substr(0, head) + "\n[... " + std::to_string(left_out) + " bytes of " + key +
         " left out of this text: see " + key + "_in_text ...]\n" + stream.substr(tail);
}

}  // namespace

// The text item, the one models read: structuredContent's JSON with the
// small fields first (the outcome, its flags, what else came back), then
// the tails, then the streams, each cut to its head and tail past
// text_budget (saying so in STREAM_in_text). Clients refuse (Claude Desktop
// past 1 MiB), file away (Claude Code past 50,000 characters) or cut (Codex
// at 10 KiB, from the end) long tool text: what they keep must hold the
// flags and both ends of the output, not the middle of stdout.
std::string ResultText(const json& structured, int64_t text_budget) {
  static const char* const kFirst[] = {"exit_code",
                                       "timed_out",
                                       "truncated",
                                       "reason",
                                       "signal",
                                       "duration_ms",
                                       "queue_ms",
                                       "tool_calls",
                                       "session",
                                       "session_new",
                                       "session_ended",
                                       "session_restarted",
                                       "images",
                                       "images_omitted",
                                       "files",
                                       "files_omitted",
                                       "files_omitted_count",
                                       "stdout_resource",
                                       "stderr_resource",
                                       "result",
                                       "result_truncated"};
  static const char* const kLast[] = {"stdout_tail", "stderr_tail", "stdout", "stderr"};
  nlohmann::ordered_json text;
  for (const char* key : kFirst) {
    if (auto it = structured.find(key); it != structured.end()) text[key] = *it;
  }
  for (const auto& [key, value] : structured.items()) {
    if (!text.contains(key) &&
        std::find(std::begin(kLast), std::end(kLast), key) == std::end(kLast)) {
      text[key] = value;  // a field this list does not know yet: among the small ones
    }
  }
  const size_t budget = static_cast<size_t>(std::max<int64_t>(text_budget, 0));
  std::map<std::string, std::string> shown;
  for (const char* key : {"stdout", "stderr"}) {
    auto it = structured.find(key);
    if (it == structured.end() || !it->is_string()) continue;
    std::string note;
    shown[key] = TextOfStream(key, it->get_ref<const std::string&>(), budget, structured, &note);
    if (!note.empty()) text[std::string(key) + "_in_text"] = note;
  }
  for (const char* key : kLast) {
    if (auto it = shown.find(key); it != shown.end()) {
      text[key] = std::move(it->second);
    } else if (auto it = structured.find(key); it != structured.end()) {
      text[key] = *it;
    }
  }
  return text.dump(-1, ' ', false, json::error_handler_t::replace);
}

json ToolResult(const ExecResult& r) {
  json structured = StructuredResult(r);
  json content =
      json::array({{{"type", "text"}, {"text", ResultText(structured, r.text_output_bytes)}}});
  for (const RunArtifact& img : r.images) {
    content.push_back(
        {{"type", "image"}, {"data", Base64Encode(img.data)}, {"mimeType", img.mime}});
  }
  // What the client fetches with resources/read: the whole streams, then
  // the files too big to embed (among the embedded ones, in order). A
  // resource past one part says how to read the rest.
  auto link = [&](const std::string& uri, const std::string& name, const std::string& mime,
                  int64_t size, std::string description) {
    const int64_t parts = ResourceParts(size);
    if (parts > 1) {
      description += "; resources/read gives it in " + std::to_string(parts) + " parts of " +
                     std::to_string(kResourcePartBytes) + " bytes: " + ResourcePartUri(uri, 1) +
                     " to " + ResourcePartUri(uri, parts) + " (" + uri + " is part 1)";
    }
    json item = {{"type", "resource_link"}, {"uri", uri},   {"name", name},
                 {"mimeType", mime},        {"size", size}, {"description", description}};
    if (parts > 1) item["_meta"] = {{"mcp-exec/parts", parts}};
    content.push_back(std::move(item));
  };
  if (!r.stdout_uri.empty()) {
    link(r.stdout_uri, "stdout", "text/plain", r.stdout_size,
         "the whole stdout of the run (" + std::to_string(r.stdout_size) +
             " bytes); the result holds its start and stdout_tail");
  }
  if (!r.stderr_uri.empty()) {
    link(r.stderr_uri, "stderr", "text/plain", r.stderr_size,
         "the whole stderr of the run (" + std::to_string(r.stderr_size) + " bytes)");
  }
  for (const RunArtifact& f : r.files) {
    if (!f.uri.empty()) {
      link(f.uri, f.name, MimeTypeForPath(f.name), f.size,
           f.name + ", too big to embed (" + std::to_string(f.size) + " bytes)");
      continue;
    }
    json resource = {{"uri", FileUri(f.name)}, {"mimeType", MimeTypeForPath(f.name)}};
    if (CheapAsText(f.data)) {
      resource["text"] = f.data;
    } else {
      resource["blob"] = Base64Encode(f.data);
    }
    content.push_back({{"type", "resource"}, {"resource", resource}});
  }
  return {
      {"content", content},
      {"structuredContent", structured},
      {"isError", false},
  };
}

json ToolError(const std::string& message) { return ToolErrorResult(message); }

}  // namespace mcpexec
