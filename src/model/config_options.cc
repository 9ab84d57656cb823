#include "model/config_options.h"

#include <cctype>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/text.h"

namespace mcpexec::config_internal {
namespace {

std::string ParseInt(const std::string& v, int64_t lo, int64_t hi, int64_t* out) {
  if (v.empty()) return "must not be empty";
  if (v.size() > 18) return "is out of range";
  int64_t n = 0;
  if (!ParseDecimal(v, &n)) return "must be a whole number";
  if (n < lo || n > hi) {
    return "must be between " + std::to_string(lo) + " and " + std::to_string(hi);
  }
  *out = n;
  return "";
}

std::function<std::string(Config&, const std::string&)> IntField(int64_t Config::*field, int64_t lo,
                                                                 int64_t hi) {
  return [=](Config& c, const std::string& v) { return ParseInt(v, lo, hi, &(c.*field)); };
}

// A signed 64-bit decimal, as Go's strconv.Atoi reads one ("+7", "-1").
// False when it is not one; *overflow when it has too many digits.
bool ParseSigned(const std::string& v, int64_t* out, bool* overflow) {
  *overflow = false;
  const bool sign = !v.empty() && (v[0] == '+' || v[0] == '-');
  const size_t first = sign ? 1 : 0;
  if (v.size() == first) return false;
  int64_t n = 0;
  for (size_t i = first; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') return false;
    if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, v[i] - '0', &n)) {
      *overflow = true;
      return false;
    }
  }
  *out = v[0] == '-' ? -n : n;
  return true;
}

// The Go server's four numeric settings: it starts with any integer, so
// this server takes any too; ApplyCompatibleMeanings brings one outside
// what this server can use to the nearest it can, once flags are read.
std::function<std::string(Config&, const std::string&)> ReferenceIntField(int64_t Config::*field) {
  return [=](Config& c, const std::string& v) -> std::string {
    if (v.empty()) return "must not be empty";
    int64_t n = 0;
    bool overflow = false;
    if (!ParseSigned(v, &n, &overflow)) {
      return overflow ? "is out of range" : "must be a whole number";
    }
    c.*field = n;
    return "";
  };
}

// Free text: any value, including empty, is taken as it is.
std::function<std::string(Config&, const std::string&)> StringField(std::string Config::*field) {
  return [=](Config& c, const std::string& v) {
    c.*field = v;
    return std::string();
  };
}

std::string Default(int64_t Config::*field) { return std::to_string(Config{}.*field); }

std::string ParseAddr(const std::string& v) {
  auto colon = v.rfind(':');
  if (colon == std::string::npos) return "must be HOST:PORT or :PORT";
  int64_t port = 0;
  std::string err = ParseInt(v.substr(colon + 1), 0, 65535, &port);
  if (!err.empty()) return "port " + err;
  std::string host = v.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return "";
  if (host.find_first_of("[]") != std::string::npos) {
    return "a bracket belongs only around a whole IPv6 host ([::1]:PORT)";
  }
  if (host.find(':') != std::string::npos) return "an IPv6 host must be in brackets";
  return "";
}

// A dotted Python module name of ASCII identifiers.
bool IsModuleName(const std::string& name) {
  bool start = true;
  for (char ch : name) {
    bool alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
    bool digit = ch >= '0' && ch <= '9';
    if (ch == '.') {
      if (start) return false;
      start = true;
    } else if (alpha || (digit && !start)) {
      start = false;
    } else {
      return false;
    }
  }
  return !start;
}

}  // namespace

// The table of every option (a declaration, exempt from the size rule).
// NOLINTNEXTLINE(readability-function-size)
const std::vector<Option>& Options() {
  static const std::vector<Option> options = {
      {"MCP_EXEC_TRANSPORT", "--transport", TransportName(Config{}.transport), "",
       "stdio, http (streamable HTTP at /mcp; streamable-http too) or sse (legacy HTTP+SSE; GET "
       "any path), in any case",
       [](Config& c, const std::string& v) -> std::string {
         // Any case; streamable-http is what the MCP specification calls it.
         std::string t = v;
         for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
         if (t == "stdio")
           c.transport = Transport::kStdio;
         else if (t == "http" || t == "streamable-http" || t == "streamable_http")
           c.transport = Transport::kHttp;
         else if (t == "sse")
           c.transport = Transport::kSse;
         else
           return "must be stdio, http (or streamable-http) or sse";
         return "";
       }},
      {"MCP_EXEC_ADDR", "--addr", Config{}.addr, "", "listen address for http/sse (HOST:PORT)",
       [](Config& c, const std::string& v) {
         std::string err = ParseAddr(v);
         if (err.empty()) c.addr = v;
         return err;
       }},
      {"MCP_EXEC_DEFAULT_TIMEOUT_S", "--default-timeout-s", Default(&Config::default_timeout_s),
       "s", "wall-clock timeout of a call that gives none (or 0); at most the max timeout",
       ReferenceIntField(&Config::default_timeout_s)},
      {"MCP_EXEC_MAX_TIMEOUT_S", "--max-timeout-s", Default(&Config::max_timeout_s), "s",
       "ceiling for a call's timeout_s", ReferenceIntField(&Config::max_timeout_s)},
      {"MCP_EXEC_MAX_OUTPUT_BYTES", "--max-output-bytes", Default(&Config::max_output_bytes),
       "bytes", "one budget shared by stdout and stderr (0 drops all output)",
       ReferenceIntField(&Config::max_output_bytes)},
      {"MCP_EXEC_MAX_STDIN_BYTES", "--max-stdin-bytes", Default(&Config::max_stdin_bytes), "bytes",
       "cap on a call's stdin, in UTF-8 bytes", ReferenceIntField(&Config::max_stdin_bytes)},
      {"MCP_EXEC_PYTHON", "--python", Config{}.python, "",
       "a venv or interpreter whose site-packages runs may import too (read-only, after the "
       "system's); it must be the embedded Python's version. The default means nothing: the "
       "interpreter is embedded",
       [](Config& c, const std::string& v) -> std::string {
         if (v.empty()) return "must not be empty";
         c.python = v;
         return "";
       }},
      {"MCP_EXEC_AUTH_TOKEN", "--auth-token", "(empty)", "",
       "when set, http/sse requests must carry it as `Authorization: Bearer <token>` or "
       "`X-MCP-AUTH: <token>`",
       StringField(&Config::auth_token)},
      {"MCP_EXEC_MAX_CONCURRENT", "--max-concurrent",
       "the CPUs the process may use (cgroup CPU quota, affinity)", "runs",
       "runs executing at once", IntField(&Config::max_concurrent, 1, 1024)},
      {"MCP_EXEC_MAX_QUEUE", "--max-queue", Default(&Config::max_queue), "runs",
       "runs waiting for a slot; past it a call is refused as at capacity",
       IntField(&Config::max_queue, 0, 100000)},
      {"MCP_EXEC_MAX_CODE_BYTES", "--max-code-bytes", Default(&Config::max_code_bytes), "bytes",
       "cap on a call's code, in UTF-8 bytes", IntField(&Config::max_code_bytes, 1, 64 * kMiB)},
      {"MCP_EXEC_MAX_REQUEST_BYTES", "--max-request-bytes",
       "6 x (code + stdin + input-file caps) + 64 KiB", "bytes", "cap on one JSON-RPC message",
       IntField(&Config::max_request_bytes, 1024, 4096 * kMiB)},
      {"MCP_EXEC_WORKDIR_ROOT", "--workdir-root", Config{}.workdir_root, "",
       "where the runs' private working directories are made (it must exist)",
       [](Config& c, const std::string& v) -> std::string {
         if (v.empty() || v[0] != '/') return "must be an absolute path";
         c.workdir_root = v;
         return "";
       }},
      {"MCP_EXEC_MOUNTS", "--mounts", "empty", "",
       "host folders in every run: comma-separated HOST_PATH:RUN_PATH[:ro|:rw][:exec], "
       "read-only and not executable by default (where the server has no mount namespace, "
       "runs find each at its HOST_PATH)",
       [](Config& c, const std::string& v) { return mounts::Parse(v, &c.mounts); }},
      {"MCP_EXEC_MEMORY_LIMIT_MB", "--memory-limit-mb", Default(&Config::memory_limit_mb), "MiB",
       "memory a run may allocate (address space beyond the pre-warmed interpreter); unset, "
       "never more than 3/8 of the memory the process may use (a container's --memory 256m "
       "gives 96)",
       IntField(&Config::memory_limit_mb, 16, kMiB)},
      {"MCP_EXEC_DISK_LIMIT_MB", "--disk-limit-mb", Default(&Config::disk_limit_mb), "MiB",
       "size of a run's working directory, and of any one file it writes; unset, never more "
       "than a quarter of the memory the process may use, since run directories are tmpfs "
       "(memory) in a container (--memory 256m gives 64)",
       IntField(&Config::disk_limit_mb, 1, kMiB)},
      {"MCP_EXEC_MAX_PROCESSES", "--max-processes", Default(&Config::max_processes), "processes",
       "processes and threads of the sandbox uid at once (all runs together; sessions may "
       "keep half of it beyond their interpreters, else the one holding the most is ended); "
       "unset, never more than one per 4 MiB of the memory the process may use (--memory "
       "256m gives 64)",
       IntField(&Config::max_processes, 8, 1000000)},
      {"MCP_EXEC_MAX_OPEN_FILES", "--max-open-files", Default(&Config::max_open_files), "files",
       "open files per process of a run", IntField(&Config::max_open_files, 64, 1048576)},
      {"MCP_EXEC_SANDBOX_UID", "--sandbox-uid", Default(&Config::sandbox_uid), "uid",
       "the user and group id runs become when the server starts as root (a server started as "
       "another user runs them as itself). The process limit and the server's watch on its "
       "runs' processes count every process of this uid: servers side by side on one host "
       "each need their own, and none a uid anything else uses",
       IntField(&Config::sandbox_uid, 1, 2147483646)},
      {"MCP_EXEC_TAIL_BYTES", "--tail-bytes", Default(&Config::tail_bytes), "bytes",
       "the last bytes of a stream that lost bytes to the cap, returned as stdout_tail / "
       "stderr_tail",
       IntField(&Config::tail_bytes, 0, kMiB)},
      {"MCP_EXEC_TEXT_OUTPUT_BYTES", "--text-output-bytes", Default(&Config::text_output_bytes),
       "bytes",
       "of each stream in the result's text item, the one models read (clients refuse, file "
       "away or cut long tool text), counted as escaped in JSON: past it, the stream's head and "
       "tail with its byte counts and where the whole is; structuredContent holds the streams as "
       "the output cap left them",
       IntField(&Config::text_output_bytes, 0, 256 * kMiB)},
      {"MCP_EXEC_MAX_IMAGES", "--max-images", Default(&Config::max_images), "images",
       "figures and images a run returns (plt.show(), display(), open figures at the end)",
       IntField(&Config::max_images, 0, 100)},
      {"MCP_EXEC_MAX_IMAGE_BYTES", "--max-image-bytes", Default(&Config::max_image_bytes), "bytes",
       "PNG size of one image; a larger figure is scaled down to fit",
       IntField(&Config::max_image_bytes, 1024, 16 * kMiB)},
      {"MCP_EXEC_MAX_IMAGE_SIDE", "--max-image-side", Default(&Config::max_image_side), "pixels",
       "the longer side of an image; a larger figure or PIL image is scaled down to it, its "
       "aspect ratio kept (clients refuse images past 2000 px a side when a request holds many, "
       "and past 8000 px always)",
       IntField(&Config::max_image_side, 64, 8000)},
      {"MCP_EXEC_MAX_OUT_FILES", "--max-out-files", Default(&Config::max_out_files), "files",
       "files a run returns from out/ in its working directory",
       IntField(&Config::max_out_files, 0, 1000)},
      {"MCP_EXEC_MAX_OUT_BYTES", "--max-out-bytes", Default(&Config::max_out_bytes), "bytes",
       "bytes of all out/ files a run returns together",
       IntField(&Config::max_out_bytes, 0, 256 * kMiB)},
      {"MCP_EXEC_MAX_RESULT_BYTES", "--max-result-bytes", Default(&Config::max_result_bytes),
       "bytes", "the repr of the code's last expression, returned as result",
       IntField(&Config::max_result_bytes, 0, 16 * kMiB)},
      {"MCP_EXEC_RESOURCE_TTL_S", "--resource-ttl-s", Default(&Config::resource_ttl_s), "seconds",
       "how long resources/read serves what a run left as a resource_link (an out/ file too big "
       "to embed, the whole of a stream that passed the output budget)",
       IntField(&Config::resource_ttl_s, 10, int64_t{7} * 86400)},
      {"MCP_EXEC_RESOURCE_STORE_MB", "--resource-store-mb", Default(&Config::resource_store_mb),
       "MiB",
       "disk for those resources together, in a folder under MCP_EXEC_WORKDIR_ROOT removed at "
       "shutdown; the oldest go first to make room; 0: none are kept (such files are omitted). "
       "Default: a quarter of that folder's filesystem, at most 1024; whatever the bound, the "
       "store leaves the runs' own files room on that filesystem (half of it, at most "
       "MCP_EXEC_DISK_LIMIT_MB per concurrent run)",
       IntField(&Config::resource_store_mb, 0, 1048576)},
      {"MCP_EXEC_TASK_AFTER_S", "--task-after-s", Default(&Config::task_after_s), "seconds",
       "a call from a client that declared the tasks extension (io.modelcontextprotocol/tasks) "
       "still running after this is answered with a task to poll (tasks/get) while it runs on",
       IntField(&Config::task_after_s, 0, 3600)},
      {"MCP_EXEC_MAX_TASKS", "--max-tasks", Default(&Config::max_tasks), "tasks",
       "tasks held at once, running or ended (an ended one keeps its result for "
       "MCP_EXEC_RESOURCE_TTL_S: in memory up to 16 KiB, past that in the resource store on "
       "disk); past it calls are answered in place; 0: no tasks. Default: one per 16 MiB of the "
       "memory the server may use, 4 to 32",
       IntField(&Config::max_tasks, 0, 10000)},
      {"MCP_EXEC_MAX_IN_FILES", "--max-in-files", Default(&Config::max_in_files), "files",
       "files a call may pass in `files`", IntField(&Config::max_in_files, 0, 10000)},
      {"MCP_EXEC_MAX_IN_BYTES", "--max-in-bytes", Default(&Config::max_in_bytes), "bytes",
       "bytes of all files a call passes in `files`, decoded",
       IntField(&Config::max_in_bytes, 0, 256 * kMiB)},
      {"MCP_EXEC_ALLOWED_ORIGINS", "--allowed-origins", "(loopback origins when bound to loopback)",
       "",
       "comma-separated Origin values http/sse requests may carry (DNS-rebinding protection); "
       "* allows every origin, and only with MCP_EXEC_AUTH_TOKEN set",
       StringField(&Config::allowed_origins)},
      {"MCP_EXEC_MAX_SESSIONS", "--max-sessions", Default(&Config::max_sessions), "sessions",
       "open MCP sessions over http/sse; past it a new one ends the least recently used idle "
       "one (no call running, no stream open)",
       IntField(&Config::max_sessions, 1, 100000)},
      {"MCP_EXEC_MAX_STREAMS", "--max-streams", Default(&Config::max_streams), "streams",
       "open server-sent event streams (each holds a connection)",
       IntField(&Config::max_streams, 1, 10000)},
      {"MCP_EXEC_SESSION_IDLE_S", "--session-idle-s", Default(&Config::session_idle_s), "s",
       "an http/sse session unused this long is closed",
       IntField(&Config::session_idle_s, 1, int64_t{86400} * 7)},
      {"MCP_EXEC_MAX_PY_SESSIONS", "--max-py-sessions",
       "half the memory the process may use / MCP_EXEC_MEMORY_LIMIT_MB, 2 to 64", "sessions",
       "live Python sessions (the exec tool's `session`) at once; past it a new one ends the "
       "least recently used idle one, and is refused only when every one has a call running",
       IntField(&Config::max_py_sessions, 1, 10000)},
      {"MCP_EXEC_HANDLE_PREFIX", "--handle-prefix", "(empty)", "",
       "written before a dot at the head of every session handle (1-24 of A-Z a-z 0-9 -): "
       "what an ingress routes a session's calls to this server by",
       [](Config& c, const std::string& v) -> std::string {
         if (v.empty() || v.size() > 24) return "must be 1 to 24 characters";
         for (char ch : v) {
           if (!isalnum(static_cast<unsigned char>(ch)) && ch != '-') {
             return "may hold only A-Z a-z 0-9 and -";
           }
         }
         c.handle_prefix = v;
         return "";
       }},
      {"MCP_EXEC_PY_SESSION_IDLE_S", "--py-session-idle-s", Default(&Config::py_session_idle_s),
       "s", "a Python session unused this long is ended",
       IntField(&Config::py_session_idle_s, 1, int64_t{86400} * 7)},
      {"MCP_EXEC_PY_SESSION_MAX_S", "--py-session-max-s", Default(&Config::py_session_max_s), "s",
       "a Python session's longest life (and its CPU-time budget); it ends after the call that "
       "passes it",
       IntField(&Config::py_session_max_s, 10, int64_t{86400} * 7)},
      {"MCP_EXEC_PY_SESSION_INTERRUPT_MS", "--py-session-interrupt-ms",
       Default(&Config::py_session_interrupt_ms), "ms",
       "how long a session's cell may ignore KeyboardInterrupt (timeout, cancel) before its "
       "interpreter is killed",
       IntField(&Config::py_session_interrupt_ms, 100, 60000)},
      {"MCP_EXEC_PRELOAD", "--preload", "(none)", "",
       "comma-separated modules imported and warmed before any run, after the promised "
       "packages, so that runs get them at once (a module that fails to import stops the start)",
       [](Config& c, const std::string& v) -> std::string {
         c.preload.clear();
         for (const std::string& name : SplitComma(v)) {
           if (!IsModuleName(name)) return "has \"" + name + "\", which is not a module name";
           c.preload += (c.preload.empty() ? "" : ",") + name;
         }
         return "";
       }},
      {"MCP_EXEC_UPSTREAMS", "--upstreams", "(none)", "",
       "code mode: a JSON file naming other MCP servers whose tools runs may call through "
       "`import mcp_tools` ({\"mcpServers\": {NAME: {\"command\", \"args\", \"env\"} or "
       "{\"url\" (https:// or http://), \"headers\", \"ca\"}, with an optional \"allow\" "
       "list}}; ${VAR} in env and headers values is the server's environment variable); each is "
       "started and listed at start, and one that cannot be stops the start",
       StringField(&Config::upstreams)},
      {"MCP_EXEC_MAX_TOOL_CALLS", "--max-tool-calls", Default(&Config::max_tool_calls), "calls",
       "nested tool calls one exec call may make (code mode); past it each is a ToolError",
       IntField(&Config::max_tool_calls, 1, 100000)},
      {"MCP_EXEC_MAX_TOOL_CALLS_IN_FLIGHT", "--max-tool-calls-in-flight",
       Default(&Config::max_tool_calls_in_flight), "calls",
       "nested tool calls of one run answered side by side (from threads, or awaited "
       "together); more wait their turn",
       IntField(&Config::max_tool_calls_in_flight, 1, 64)},
      {"MCP_EXEC_DESCRIBE_TOOLS_MAX", "--describe-tools-max", Default(&Config::describe_tools_max),
       "tools",
       "code mode: the exec tool's description names every upstream tool up to this many; past "
       "it, it names the servers with their tool counts and how to find a tool "
       "(mcp_tools.search)",
       IntField(&Config::describe_tools_max, 0, 100000)},
      {"MCP_EXEC_MAX_TOOL_RESULT_BYTES", "--max-tool-result-bytes",
       Default(&Config::max_tool_result_bytes), "bytes",
       "the largest result of one nested tool call (as JSON), and of one call's arguments (at "
       "least 64 KiB); a larger one is a ToolError",
       IntField(&Config::max_tool_result_bytes, 1024, int64_t{64} * kMiB)},
      {"MCP_EXEC_ZYGOTE_HUGE_PAGES", "--zygote-huge-pages", Default(&Config::zygote_huge_pages), "",
       "1: the warmed interpreter's heap goes on transparent huge pages before the first fork "
       "(cheaper forks and exits); 0: never",
       IntField(&Config::zygote_huge_pages, 0, 1)},
      {"MCP_EXEC_SPARE_PREFAULT", "--spare-prefault", Default(&Config::spare_prefault), "",
       "a spare runner, waiting for its run, first rehearses what a run writes (1: the run's "
       "own path; 2: also a small pandas groupby), taking those copy-on-write faults off the "
       "request's path; 0: never. Here 1 saved about 1.3 ms of a print(1) call 50 ms after "
       "the last and 0.5-0.9 ms back to back; 2 saved about 1 ms of a pandas call but cost "
       "back-to-back calls 3-5 ms, which wait for spares still at it",
       IntField(&Config::spare_prefault, 0, 2)},
      {"MCP_EXEC_SHUTDOWN_GRACE_S", "--shutdown-grace-s", Default(&Config::shutdown_grace_s), "s",
       "how long the calls already received may finish before they are ended (each answered "
       "with its output so far): on SIGTERM over http/sse, at the end of stdin over stdio (a "
       "SIGTERM there ends them at once)",
       IntField(&Config::shutdown_grace_s, 0, 3600)},
      {"MCP_EXEC_LOG_LEVEL", "--log-level", Config{}.log_level, "", "debug, info, warn or error",
       [](Config& c, const std::string& v) -> std::string {
         if (v != "debug" && v != "info" && v != "warn" && v != "error") {
           return "must be debug, info, warn or error";
         }
         c.log_level = v;
         return "";
       }},
  };
  return options;
}

}  // namespace mcpexec::config_internal
