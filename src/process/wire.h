// The control protocol between the supervisor and the zygote: fixed headers on
// a SOCK_SEQPACKET socketpair (one message per send, never split), with file
// descriptors passed as SCM_RIGHTS. The zygote never sees code, stdin or output:
// it gets pipe ends and a sealed memfd holding the code, and forks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace mcpexec::wire {

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

// What the code memfd holds: the code and the caller's input files, each
// field a little-endian u32 length then its bytes: code, file count, then
// per file its relative path and its content.
// The little-endian u32 at p: the length prefix of the run bundle's fields
// and of the runtime's result records.
uint32_t LoadU32LE(const char* p);

std::string EncodeRunBundle(const std::string& code,
                            const std::vector<std::pair<std::string, std::string>>& files);
bool DecodeRunBundle(const std::string& bundle, std::string* code,
                     std::vector<std::pair<std::string, std::string>>* files);

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

// The status pipe of a run. The supervisor trusts exactly one record on it:
// the verdict on the runner's own lockdown, written by mcp-exec's code before
// any of the caller's code runs (so nothing the code writes can come before
// it). The exit status and signal never travel here: they come from the
// zygote's wait status. After the verdict, the runtime may add one RunNote
// (what only Python knows), which the supervisor validates against the real
// exit status; anything else is ignored and never buffered.
constexpr uint32_t kVerdictMagic = 0x4d435856;  // "VXCM"
constexpr uint32_t kNoteMagic = 0x4d43584e;     // "NXCM"
struct LockdownVerdict {
  uint32_t magic;
  uint32_t ok;          // 1: every layer holds and the code is about to run
  int32_t lockdown_us;  // the lockdown's cost on the request's path
  int32_t ahead_us;     // and ahead of it (spares)
  char error[240];      // ok == 0: which layer failed, NUL-terminated
};
static_assert(sizeof(LockdownVerdict) == 256, "one atomic pipe write");

// What only Python knows about how the caller's code ended: an uncaught
// MemoryError, or an uncaught OSError EFBIG (a write past RLIMIT_FSIZE:
// CPython ignores SIGXFSZ, so the kernel's signal never ends it).
enum RunReason : uint32_t { kReasonNone = 0, kReasonMemory = 1, kReasonFileSize = 2 };
struct RunNote {
  uint32_t magic;
  uint32_t reason;  // RunReason
};

// A session's cell ends with this record on the cell's status pipe (after the
// verdict on the session's first cell). The session's interpreter writes it
// after running caller code, so it is believed only about that session's own
// cell: its exit status and reason; the process's end still comes from the
// zygote.
constexpr uint32_t kCellDoneMagic = 0x4d435843;  // "CXCM"
struct CellDone {
  uint32_t magic;
  int32_t status;   // 0-255, as the cell's exit code
  uint32_t reason;  // RunReason
};

// What the supervisor reads of a status pipe at most; past it the pipe is
// closed (the runner's further writes fail with EPIPE).
constexpr size_t kStatusReadMax = sizeof(LockdownVerdict) + sizeof(CellDone);
static_assert(sizeof(CellDone) >= sizeof(RunNote), "the bound covers either record");

// Returns false with errno set on failure. Retries EINTR.
bool Send(int sock, const Header& h, const void* payload, size_t len, const int* fds, int nfds);
// Returns 1 on a message, 0 on EOF, -1 on error (errno set). Received fds are
// close-on-exec, and closed at once when fds is nullptr.
int Receive(int sock, Header* h, std::string* payload, std::vector<UniqueFd>* fds);
// The same without waiting: -1 with EAGAIN when nothing is queued.
int ReceiveNow(int sock, Header* h, std::string* payload, std::vector<UniqueFd>* fds);

}  // namespace mcpexec::wire
