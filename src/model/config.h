// Configuration: one schema, read once at start from MCP_EXEC_* variables and
// command-line flags (a flag wins over its variable). A set but malformed value
// is a start-up error naming the variable or flag; there is no silent fallback.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/mounts.h"
#include "model/run_limits.h"

namespace mcpexec {

enum class Transport { kStdio, kHttp, kSse };

struct Config {
  Transport transport = Transport::kStdio;
  std::string addr = ":8080";
  int64_t default_timeout_s = 30;
  int64_t max_timeout_s = 300;
  int64_t max_output_bytes = 1048576;
  int64_t max_stdin_bytes = 1048576;
  std::string python = "python3";
  std::string auth_token;  // empty: no auth
  // Ours.
  int64_t max_concurrent = 0;  // 0 in the schema means "number of CPUs"
  int64_t max_queue = 64;
  int64_t max_code_bytes = 1048576;
  int64_t max_request_bytes = 0;  // 0 means derived from the code and stdin caps
  std::string workdir_root = "/tmp";
  // Host folders in every run (MCP_EXEC_MOUNTS), checked at start; and the
  // variable or flag that set them, for the error that names it.
  std::vector<mounts::Mount> mounts;
  std::string mounts_from;
  // MCP_EXEC_PYTHON's site-packages folders (python_env::Probe), added to the
  // runs' sys.path; those outside the system folders are also in `mounts`,
  // read-only (and executable: compiled modules are mapped from them).
  std::vector<std::string> python_site;
  // Per-run limits of the sandbox.
  int64_t memory_limit_mb = 512;
  int64_t disk_limit_mb = 256;
  int64_t max_processes = 256;
  int64_t max_open_files = 1024;
  // The uid and gid runs become when the server starts as root.
  int64_t sandbox_uid = 65532;
  // What comes back besides the streams.
  int64_t tail_bytes = 4096;  // of a stream that lost bytes to the cap
  // Of each stream, in the text item models read (structuredContent keeps
  // it whole): past this, its head and tail with the byte counts.
  int64_t text_output_bytes = 32768;
  int64_t max_images = 8;
  int64_t max_image_bytes = 1048576;
  int64_t max_image_side = 2000;  // pixels on an image's longer side
  int64_t max_out_files = 16;
  int64_t max_out_bytes = 8388608;   // all out/ files of a run together
  int64_t max_result_bytes = 16384;  // the repr of the last expression
  int64_t resource_ttl_s = 900;      // links to what runs leave (ResourceStore)
  int64_t resource_store_mb = 1024;
  // Calls answered as tasks (the io.modelcontextprotocol/tasks extension).
  int64_t task_after_s = 5;
  int64_t max_tasks = 32;
  // The caller's input files.
  int64_t max_in_files = 64;
  int64_t max_in_bytes = 4194304;  // all of them together, decoded
  // HTTP and SSE transports.
  std::string allowed_origins;  // comma-separated; empty: loopback origins when bound to loopback
  int64_t max_sessions = 256;
  int64_t max_streams = 128;
  int64_t session_idle_s = 1800;
  int64_t shutdown_grace_s = 20;
  // Sessions (the exec tool's `session` argument): live interpreters kept
  // between calls. 0 max_py_sessions: derived from the machine's memory.
  int64_t max_py_sessions = 0;
  int64_t py_session_idle_s = 600;
  // Written before a dot at the head of every session handle this server
  // mints, so that an ingress can route a handle's calls to its pod.
  std::string handle_prefix;
  int64_t py_session_max_s = 14400;  // lifetime, and the interpreter's CPU budget
  int64_t py_session_interrupt_ms = 2000;
  // Performance: modules the zygote imports and warms besides the promised
  // packages (comma-separated), and its heap on transparent huge pages.
  std::string preload;
  std::string upstreams;  // code mode: the MCP_EXEC_UPSTREAMS file ("" none)
  int64_t max_tool_calls = 100;
  int64_t max_tool_calls_in_flight = 8;  // of one run, answered side by side
  int64_t describe_tools_max = 40;       // past it the description names servers only
  int64_t max_tool_result_bytes = 1048576;
  int64_t zygote_huge_pages = 1;
  int64_t spare_prefault = 1;  // measured: 1 pays; 2 costs back-to-back calls
  std::string log_level = "info";
  // Where max_concurrent, memory_limit_mb, disk_limit_mb and max_py_sessions
  // came from: the
  // variable or flag that set it, or what its default was derived from (the
  // cgroup's CPU quota and memory limit, the CPU affinity; base/resources.h).
  std::string max_concurrent_from, memory_limit_from, disk_limit_from, max_py_sessions_from,
      max_processes_from, resource_store_from, max_tasks_from;
  // What the resource store leaves free on its filesystem for the runs'
  // own files (derived at start: ResourceStoreShare).
  int64_t resource_store_keep_free_mb = 0;
  // Settings the server starts with but applies otherwise than written, or
  // that drop something (the Go server's meanings, kept for its configs):
  // one plain line each, for the start log and doctor.
  std::vector<std::string> warnings;
};

// Outcome of parsing: either a Config, or an error line, or a request for
// --help / --version text.
struct ParseResult {
  std::optional<Config> config;
  std::string error;           // one line, names the variable or flag
  std::string print_and_exit;  // --help / --version text
  std::string command;         // "" (serve) or "doctor"
  bool json_output = false;    // doctor --json
};

// The items of a comma-separated setting, each without the spaces around it.
std::vector<std::string> CommaList(const std::string& csv);
// Whether a comma-separated MCP_EXEC_ALLOWED_ORIGINS holds the wildcard `*`
// (every origin; refused at start without a token).
bool HasWildcardOrigin(const std::string& csv);

// env: the process environment as a map (tests pass their own). args: argv
// without argv[0].
ParseResult ParseConfig(const std::map<std::string, std::string>& env,
                        const std::vector<std::string>& args);
// The same, with the process's resources given (tests).
struct Resources;
ParseResult ParseConfig(const std::map<std::string, std::string>& env,
                        const std::vector<std::string>& args, const Resources& resources);

std::map<std::string, std::string> EnvironmentMap(char** envp);

std::string HelpText();

// Every option as --help shows it: the one list README's table is checked
// against (tests/unit/config_test.cc).
struct OptionDoc {
  std::string env, flag, default_text, unit, help;
};
std::vector<OptionDoc> OptionDocs();
std::string TransportName(Transport t);

// The derived request-size cap: a JSON string can escape one byte into six.
int64_t EffectiveMaxRequestBytes(const Config& c);

// The limits every run gets, from the config (MiB made bytes).
RunLimits RunLimitsOf(const Config& c);
// MCP_EXEC_MAX_PY_SESSIONS when unset: half the memory the process may use
// over the per-run memory limit, clamped to 2..64.
int64_t DefaultMaxPySessions(int64_t memory_mb, int64_t memory_limit_mb);
// MCP_EXEC_MEMORY_LIMIT_MB when unset: 512 MiB, but never more than 3/8 of
// the memory the process may use (a container's --memory 256m gives 96 MiB).
// MCP_EXEC_DISK_LIMIT_MB when unset: 256 MiB, but never more than a quarter
// of it (64 MiB), since a container's run directories are tmpfs, memory too.
// Measured in the image under --memory 256m: the server idles at 83 MiB, so
// a run's memory and files together (160 MiB) leave it room, and a run
// that outgrows it anyway is what the kernel's OOM killer takes
// (sandbox/limits.cc), never the server.
int64_t DefaultMemoryLimitMb(int64_t memory_mb);
int64_t DefaultDiskLimitMb(int64_t memory_mb);
// MCP_EXEC_MAX_PROCESSES when unset: 256, but never more than one per 4 MiB
// of the memory the process may use. A process of a run costs about 1.5 MiB
// of it however little it does (its page tables, kernel stack and the pages
// it copies): measured in the image under --memory 256m, 119 idle forks took
// the container from 86 to 267 of its 268 MiB, where the OOM killer could
// take the forking run itself. 64 under --memory 256m.
int64_t DefaultMaxProcesses(int64_t memory_mb);

}  // namespace mcpexec
