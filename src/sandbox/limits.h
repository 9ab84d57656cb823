// Resource limits per run, as rlimits. RLIMIT_AS counts address space, not
// memory: the runner starts with the zygote's mappings, so the limit is that
// size plus the configured memory budget. RLIMIT_NPROC counts every process
// of the sandbox uid on the host, so it bounds all runs together.
#pragma once

#include <cstdint>
#include <string>

#include "sandbox/layers.h"

namespace mcpexec::sandbox::limits {

// RLIMIT_CPU is the run's timeout plus this: the wall-clock deadline is the
// real limit; the rlimit catches a process that would outlive it unseen.
constexpr int64_t kCpuSlackS = 5;

bool ApplyInRunner(const RunLimits& limits, int64_t timeout_s, std::string* error);
// What ApplyInRunner sets, in words (the rlimits layer's detail).
std::string Describe(const RunLimits& limits);

// Lowers RLIMIT_CPU to the run's timeout (plus slack) once it is known.
bool LowerCpuLimit(int64_t timeout_s, std::string* error);

// Current address-space size of this process, in bytes (VmSize).
int64_t AddressSpaceBytes();

}  // namespace mcpexec::sandbox::limits
