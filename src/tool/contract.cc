#include "tool/contract.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "base/utf8.h"
#include "protocol/mcp_session.h"

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
        {"stdin", {{"type", "string"}, {"description", "text fed to the program's stdin"}}}}},
      {"required", {"code"}},
      {"additionalProperties", false},
  };
}

json ExecOutputSchema() {
  return {
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
           "file_size (a file grew past the disk limit, SIGXFSZ), seccomp (a forbidden system "
           "call, SIGSYS), signal (another signal; see signal), cancelled (the client cancelled "
           "the call), shutdown (the server stopped during the run; the output so far is kept)"}}},
        {"queue_ms", {{"type", "integer"}, {"description", "time spent waiting for a slot"}}}}},
      {"required", {"stdout", "stderr", "exit_code", "duration_ms", "truncated", "timed_out"}},
  };
}

std::string ExecDescription(const Config& c, const RuntimeReport& rt,
                            const std::string& sandbox_summary) {
  std::ostringstream o;
  o << "Run Python " << (rt.python_version.empty() ? "3" : rt.python_version)
    << " code and return its stdout, stderr, exit_code, duration_ms, truncated and timed_out. "
       "Each call is a fresh process started from a pre-warmed interpreter; nothing persists "
       "between calls. The code runs as __main__ in a private, writable working directory "
       "that is removed afterwards. Print what you want back.";
  o << " Importable packages besides the standard library: ";
  if (rt.packages.empty()) o << "none";
  for (size_t i = 0; i < rt.packages.size(); ++i) {
    o << (i ? ", " : "") << rt.packages[i].first << " " << rt.packages[i].second;
  }
  o << " (already imported: importing them is instant; matplotlib uses the Agg backend, save "
       "figures to files).";
  // The numbers a call really gets: a default above the cap is the cap.
  o << " Limits: timeout_s defaults to " << ClampTimeout(std::nullopt, c) << " s and is capped at "
    << c.max_timeout_s << " s; memory " << c.memory_limit_mb
    << " MiB (past it: MemoryError, reason memory); files in the working directory "
    << c.disk_limit_mb << " MiB; stdout and stderr share one budget of " << c.max_output_bytes
    << " bytes (the rest is dropped and truncated is true); stdin at most " << c.max_stdin_bytes
    << " bytes; code at most " << c.max_code_bytes << " bytes.";
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

std::variant<ExecRequest, std::string> ValidateExecArguments(const json& args, const Config& c) {
  static const json kEmpty = json::object();
  const json& a = args.is_object() ? args : kEmpty;
  // 1. code
  auto code_it = a.find("code");
  if (code_it == a.end() || !code_it->is_string() ||
      IsBlank(code_it->get_ref<const std::string&>())) {
    return std::string("code must not be empty");
  }
  // 2. unknown arguments, then types
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (it.key() != "code" && it.key() != "timeout_s" && it.key() != "stdin") {
      return "unknown argument: " + it.key() + " (accepted: code, timeout_s, stdin)";
    }
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
    return "stdin exceeds limit of " + std::to_string(c.max_stdin_bytes) + " bytes";
  }
  req.code = code_it->get<std::string>();
  if (static_cast<int64_t>(req.code.size()) > c.max_code_bytes) {
    return "code exceeds limit of " + std::to_string(c.max_code_bytes) + " bytes";
  }
  // 4. timeout: never rejected
  req.timeout_s = ClampTimeout(timeout, c);
  return req;
}

json StructuredResult(const ExecResult& r) {
  json j = {
      {"stdout", RepairUtf8(r.stdout_data)},
      {"stderr", RepairUtf8(r.stderr_data)},
      {"exit_code", r.exit_code},
      {"duration_ms", r.duration_ms},
      {"truncated", r.truncated},
      {"timed_out", r.timed_out},
      {"queue_ms", r.queue_ms},
  };
  if (r.signal) j["signal"] = r.signal;
  if (!r.reason.empty()) j["reason"] = r.reason;
  return j;
}

json ToolResult(const ExecResult& r) {
  json structured = StructuredResult(r);
  return {
      {"content", json::array({{{"type", "text"}, {"text", structured.dump()}}})},
      {"structuredContent", structured},
      {"isError", false},
  };
}

json ToolError(const std::string& message) { return ToolErrorResult(message); }

}  // namespace mcpexec
