// The exec tool's contract: checking a call's arguments into an ExecRequest.
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

}  // namespace mcpexec
