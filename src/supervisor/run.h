// The supervisor's own vocabulary for one run and for the zygote's report,
// independent of any tool: the exec tool maps its arguments to a RunRequest
// and a RunOutcome to its result.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace mcpexec {

struct RunRequest {
  std::string code;
  std::string stdin_data;
  int64_t timeout_s = 0;  // wall clock; the tool has defaulted and clamped it
  // Written into the working directory before the code runs: relative path
  // (checked by the tool), content.
  std::vector<std::pair<std::string, std::string>> files;
};

// An image or a file the run sent back on its results channel, checked and
// bounded by the supervisor.
struct RunArtifact {
  std::string name;  // a file's path relative to the working directory ("out/a.csv")
  std::string mime;  // an image's type (only image/png)
  std::string data;
  // An out/ file too big to embed: where the resource store keeps it
  // (ResourceStore, resources/read), and its size; data is then empty.
  std::string uri;
  int64_t size = 0;
};

// Something the run would have sent past a bound.
struct OmittedFile {
  std::string path;
  int64_t bytes = 0;
  std::string why;  // "count" or "bytes"
};

// How a run that did start came to its end.
enum class RunEnd {
  kExited,     // by itself: exit_code says how
  kTimeout,    // the deadline killed it
  kCancelled,  // the client cancelled it
  kShutdown,   // the server's shutdown ended it
  kMemory,     // past its memory limit (cgroup kill, or an uncaught MemoryError)
  kCpu,        // SIGXCPU: past RLIMIT_CPU
  kFileSize,   // SIGXFSZ: a file past the disk limit
  kSeccomp,    // SIGSYS: a call the policy kills on
  kSignal,     // any other fatal signal
  kProcesses,  // the zygote ended it: all runs together held more processes than their share
};
// Every end but kExited, in a fixed order.
const std::vector<RunEnd>& AbnormalRunEnds();
// "timeout", "cancelled", ... ("" for kExited): the names logs, metrics and
// the tool's `reason` share.
const char* RunEndName(RunEnd end);

// Why a call got a tool error instead of a run's outcome: one label per
// cause, for its log line and mcp_exec_runs_total{outcome}.
enum class RunFailure {
  kAtCapacity,          // the queue was full (MCP_EXEC_MAX_CONCURRENT, MCP_EXEC_MAX_QUEUE)
  kPySessionsFull,      // no room for another Python session
  kLayersMissing,       // a required sandbox layer is missing: the server runs nothing
  kCancelled,           // cancelled while it waited for a slot
  kShutdown,            // the server stopped while it waited, or took the sandbox with it
  kInternal,            // the supervisor could not prepare it (directory, pipes, eventfd)
  kSandboxUnavailable,  // the sandbox was restarting, or refused the message
  kStartFailed,         // the sandbox could not start it (fork, or it died before its lockdown)
  kLockdownRefused,     // a sandbox layer failed in the runner: none of its code ran
  kSandboxLost,         // the sandbox died during it
  kSandboxStuck,        // the sandbox did not confirm the end of it once killed
};
const std::vector<RunFailure>& RunFailures();
const char* RunFailureName(RunFailure f);

// A tool error with its cause.
struct Failed {
  RunFailure cause;
  std::string message;
};

// Where a run's time went, for its log line ("trace_us") and the bench: each
// phase's end in microseconds from the call's arrival at the executor (-1:
// not reached or not known). code_started and code_finished, and the
// runner's minor page faults before its code (its life as a spare) and
// during it, are the runner's own word (its last status record): shown,
// never decided on.
struct RunTrace {
  int64_t handed_us = -1;         // the run sent to the sandbox
  int64_t code_started_us = -1;   // the runtime called in the runner
  int64_t code_finished_us = -1;  // and returned
  int64_t drained_us = -1;        // the output and results pipes read to their end
  int64_t status_known_us = -1;   // the sandbox's word on the run's end
  int64_t answered_us = -1;       // the outcome handed to the protocol
  int64_t torn_down_us = -1;      // every process of the run reaped, its memory freed
  int64_t faults_before = -1, faults_during = -1;
};

struct RunOutcome {
  std::string stdout_data;  // raw bytes as the run wrote them, within the budget
  std::string stderr_data;
  bool truncated = false;    // the shared budget dropped bytes
  int64_t output_bytes = 0;  // bytes read from both streams, kept or dropped
  int exit_code = 0;         // 0-255, or -1 when killed (deadline, cancel, signal)
  int signal = 0;            // the signal that ended it, 0 if none
  RunEnd end = RunEnd::kExited;
  int64_t duration_ms = 0;
  int64_t queue_ms = 0;
  // The lockdown's cost on the request's path and ahead of it.
  int32_t lockdown_us = 0, lockdown_ahead_us = 0;
  // The last bytes of a stream that lost bytes to the budget.
  bool stdout_lost = false, stderr_lost = false;
  std::string stdout_tail, stderr_tail;
  // The whole of a stream that lost bytes, in the resource store (its URI
  // and size; empty when it was not kept: past the run's disk limit or the
  // store's bound).
  std::string stdout_uri, stderr_uri;
  // A stream that lost bytes whose whole copy could not be kept: why.
  std::string stdout_not_kept, stderr_not_kept;
  int64_t stdout_size = 0, stderr_size = 0;
  // From the results channel.
  std::vector<RunArtifact> images;  // in the order the run showed them
  std::vector<RunArtifact> files;   // out/ files, sorted by path
  int64_t images_omitted = 0;
  std::vector<OmittedFile> files_omitted;
  int64_t files_omitted_count = 0;  // may exceed files_omitted.size()
  int64_t tool_calls = -1;  // code mode: nested calls made (-1: the server has no upstreams)
  bool has_result = false, result_truncated = false;
  std::string result;  // repr of the last expression
  RunTrace trace;
};

// What the zygote reports about its interpreter (python version, packages)
// and its sandbox. (clang-tidy cannot see that nlohmann::json's implicit
// moves do not throw.)
struct RuntimeReport {  // NOLINT(bugprone-exception-escape)
  std::string python_version;
  // distribution name -> version, only the importable ones, in promise order.
  std::vector<std::pair<std::string, std::string>> packages;
  std::vector<std::string> missing;  // promised but not importable
  // MCP_EXEC_PRELOAD's modules (name, version), imported in the zygote.
  std::vector<std::pair<std::string, std::string>> preloaded;
  // Other common data packages the image ships (tabulate, openpyxl, pyarrow,
  // ...): (distribution, version), importable, imported on first use.
  std::vector<std::pair<std::string, std::string>> extras;
  nlohmann::json sandbox;  // namespaces and layers, from the zygote
  nlohmann::json image;    // the zygote's memory before and after huge pages
};

RuntimeReport ParseRuntimeReport(const nlohmann::json& j);

}  // namespace mcpexec
