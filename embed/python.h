// The embedding glue: the one place that talks to CPython. It starts the
// interpreter the build was made against, loads the runtime compiled into
// the binary (python_runtime/, via runtime_source.cc), warms it up, forks
// through CPython's hooks, and runs a caller's code in a runner.
#pragma once

#include <string>

namespace mcpexec::embed {

// Isolated config, UTF-8 mode, the build's prefix as home. Returns false
// with *error set if CPython refuses.
bool InitInterpreter(std::string* error);

// Loads the runtime module and runs its warm_up() (imports and warms the
// promised packages). *report: its report, as JSON text.
bool WarmUp(std::string* report, std::string* error);

// CPython's fork hooks, around a fork() or clone() of the process.
void BeforeFork();
void AfterForkInChild();
void AfterForkInParent();

// In a locked-down runner: runs `code` as __main__ in `cwd`. Returns the
// exit status; *memory_error: it ended with an uncaught MemoryError.
int RunCode(const std::string& code, const std::string& cwd, bool* memory_error);

}  // namespace mcpexec::embed
