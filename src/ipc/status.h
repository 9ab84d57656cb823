// The status pipe of a run (runner -> supervisor): fixed-size records in
// host byte order, each written with one write() below PIPE_BUF, so never
// split or interleaved.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mcpexec::ipc {

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
// A one-shot runner's last record, written after the caller's code: the
// reason, and the runner's word on its phases for the run's trace (the log
// line only; nothing is decided on them): CLOCK_MONOTONIC, in ns, when the
// runtime was called and when it returned, and the runner's minor page
// faults before the call (its life as a spare) and during it.
struct RunNote {
  uint32_t magic;
  uint32_t reason;  // RunReason
  int64_t code_started_ns;
  int64_t code_finished_ns;
  int64_t faults_before;
  int64_t faults_during;
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
constexpr size_t kStatusReadMax =
    sizeof(LockdownVerdict) +
    (sizeof(CellDone) > sizeof(RunNote) ? sizeof(CellDone) : sizeof(RunNote));
static_assert(sizeof(RunNote) + sizeof(LockdownVerdict) < 4096, "one atomic pipe write each");

}  // namespace mcpexec::ipc
