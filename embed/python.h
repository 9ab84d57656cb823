// The embedding glue: the one place that talks to CPython. It starts the
// interpreter the build was made against, loads the runtime compiled into
// the binary (python_runtime/, via runtime_source.cc), warms it up, forks
// through CPython's hooks, and runs a caller's code in a runner.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mcpexec::embed {

// Isolated config, UTF-8 mode, the build's prefix as home. Returns false
// with *error set if CPython refuses.
// huge_arenas: the warm-up's object arenas in one region that
// CollapseHeapToHugePages() can put on huge pages.
bool InitInterpreter(bool huge_arenas, std::string* error);

// Loads the runtime module and runs its warm_up() (imports and warms the
// promised packages, then the preload modules). *report: its report, as
// JSON text.
// site: folders whose packages runs may import too (site.addsitedir, after
// the system's), before the packages are imported.
bool WarmUp(const std::vector<std::string>& preload, const std::vector<std::string>& site,
            std::string* report, std::string* error);

// The process's memory as the kernel counts it: mappings, RSS and the part
// of it on transparent huge pages.
struct MemoryShape {
  int64_t mappings = 0, rss_kib = 0, anon_huge_kib = 0;
};
MemoryShape ReadMemoryShape();
// Puts the anonymous private memory (the warmed heap) on transparent huge
// pages where the kernel allows (MADV_HUGEPAGE, then MADV_COLLAPSE): each
// fork then copies one entry per 2 MiB instead of 512. Returns how many
// bytes were collapsed.
int64_t CollapseHeapToHugePages();

// In a spare runner before its run: the runtime's prefault(level) (see
// there).
void Prefault(int level);

// CPython's fork hooks, around a fork() or clone() of the process.
void BeforeFork();
void AfterForkInChild();
void AfterForkInParent();

// In the zygote, after WarmUp: a fatal signal (segfault, abort, ...) first
// lets faulthandler print the Python traceback, then flushes the streams
// (best effort: the process is dying), then kills as before. Runners
// inherit it.
void InstallCrashFlush();

// What one run gets besides its code.
struct RunInput {
  std::string code;
  std::string cwd;
  int results_fd = -1;                    // the results pipe (records: ipc/result_records.h)
  int tools_fd = -1;                      // code mode's tool channel (frames: ipc/tool_frames.h)
  std::map<std::string, int64_t> limits;  // max_images, max_image_bytes, ...
  std::vector<std::pair<std::string, std::string>> files;  // relative path, content
};

// In a locked-down runner: writes the input files, runs the code as
// __main__ in its cwd, sends the results. Returns the exit status;
// *reason: the runtime's reason (see run() in the runtime): "memory" for an
// uncaught MemoryError, "file_size" for an uncaught OSError EFBIG, or "".
int RunCode(const RunInput& input, std::string* reason);

// In a session's interpreter: one cell, numbered from 1, in the session's
// lasting __main__ (state, imports and files kept from the cells before).
// What a one-shot run does at its end (joining threads, exit handlers) is
// left for the session's end. Returns the cell's exit status.
int RunCell(const RunInput& input, int cell, std::string* reason);

// Runs wait() with the GIL released, so the session's own threads go on
// between cells.
void WithoutGil(void (*wait)(void*), void* arg);

// A SIGINT that arrived after the last cell ended (an interrupt that came
// too late) is dropped before the next cell starts.
void DropPendingInterrupt();

}  // namespace mcpexec::embed
