// The Python runtime's modules as compiled into the binary (generated from
// python_runtime/mcp_exec_runtime/ into runtime_source.cc), in the order
// they are loaded: each after the modules it imports, __init__ last.
#pragma once

#include <cstddef>

namespace mcpexec {

struct RuntimeModule {
  const char* name;  // "warm", ..., "__init__" (the package itself)
  const char* source;
};

extern const RuntimeModule kRuntimeModules[];
extern const size_t kRuntimeModuleCount;

}  // namespace mcpexec
