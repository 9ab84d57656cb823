// The control protocol between the supervisor and the zygote: fixed headers
// on a SOCK_SEQPACKET socketpair (one message per send, never split), with
// file descriptors passed as SCM_RIGHTS. The zygote never sees code, stdin
// or output: it gets pipe ends and a sealed memfd holding the code
// (ipc/run_bundle.h), and forks.
//
// A message: a Header (type, flags, run id, value; host byte order: both
// ends are this binary on one machine), then at most kMaxPayload bytes of
// payload (what each type says), then up to 8 fds.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace mcpexec::ipc {

enum class Type : uint32_t {
  kReady = 1,        // zygote -> supervisor; payload: runtime report (JSON)
  kRun = 2,          // supervisor -> zygote; payload: RunParams; fds: kRunFds
  kStarted = 3,      // zygote -> supervisor; value: runner pid
  kStartFailed = 4,  // zygote -> supervisor; value: errno; payload: what failed
  kExited = 5,       // zygote -> supervisor; value: wait status
  kKill = 6,         // supervisor -> zygote: kill the run's whole process tree
  kFatal = 7,        // zygote -> supervisor; payload: why the zygote cannot serve
  // A session's next cell: supervisor -> zygote -> the session's runner (over
  // the socket the runner got its first run on); payload: RunParams; fds:
  // kRunFds, fresh ones for this cell.
  kCell = 8,
  kInterrupt = 9,  // supervisor -> zygote: SIGINT to a session's runner (its cell)
  // A session's cell ended: supervisor -> zygote, which counts what the
  // sessions hold now (WatchRuns) before the cell is answered; the zygote
  // answers kCounted, value 1 when the count ended this session (its
  // kExited follows, flagged kExitedHeldProcesses), else 0.
  kCount = 10,
  kCounted = 11,
  // zygote -> supervisor, after kExited: the run's top process is reaped, so
  // every process of the run is gone and its memory freed (the trace's
  // "torn down").
  kReaped = 12,
};

// kExited's flags: what the zygote knows of the run's end besides its
// wait status.
constexpr uint32_t kExitedOomKilled = 1;  // the run's cgroup killed for memory
// A run the zygote ended (WatchRuns): a session past the CPU bound of its
// cell, or holding the most when the sessions held more processes than
// their share, or any run holding the most when all runs together held
// more than theirs while another run was going.
constexpr uint32_t kExitedCpuBound = 2;
constexpr uint32_t kExitedHeldProcesses = 4;
constexpr uint32_t kExitedRunsHeldProcesses = 8;
constexpr uint32_t kExitedByZygote =
    kExitedCpuBound | kExitedHeldProcesses | kExitedRunsHeldProcesses;

struct Header {
  Type type;
  uint32_t reserved;  // kExited: kExited* flags
  uint64_t run_id;
  int64_t value;
};

// Order of the fds that travel with kRun. kResults: the runtime's figures,
// files and last value, as records (python_runtime/mcp_exec_runtime/results.py);
// kCode: a sealed memfd holding a RunBundle; kTools: a stream socket whose
// other end only the supervisor holds (code mode's calls to other servers).
enum RunFd {
  kStdin = 0,
  kStdout = 1,
  kStderr = 2,
  kStatus = 3,
  kCode = 4,
  kResults = 5,
  kTools = 6,  // the run's end of its tool channel (supervisor/tool_channel.h)
  kRunFdCount = 7
};

// Fixed-size parameters of a run (no run data: no code, no stdin).
struct RunParams {
  char workdir[512];
  int64_t timeout_s;  // this run's, or this cell's, wall-clock limit
  // Non-zero: the runner is a session's interpreter. It stays alive after
  // its first run and takes further cells (kCell) on its socket; its CPU
  // limit is this many seconds for its whole life (each cell gets its own
  // share below it).
  int64_t session_cpu_s;
};

constexpr size_t kMaxPayload = size_t{256} * 1024;

// kFatal's value when the zygote could not finish its namespaces: the
// supervisor then starts it again with fewer.
constexpr int64_t kFatalNamespaces = 1;

// Returns false with errno set on failure. Retries EINTR.
bool Send(int sock, const Header& h, const void* payload, size_t len, const int* fds, int nfds);
// Returns 1 on a message, 0 on EOF, -1 on error (errno set). Received fds are
// close-on-exec, and closed at once when fds is nullptr.
int Receive(int sock, Header* h, std::string* payload, std::vector<UniqueFd>* fds);
// The same without waiting: -1 with EAGAIN when nothing is queued.
int ReceiveNow(int sock, Header* h, std::string* payload, std::vector<UniqueFd>* fds);

}  // namespace mcpexec::ipc
