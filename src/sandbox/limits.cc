#include "sandbox/limits.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "base/unique_fd.h"

namespace mcpexec::sandbox::limits {
namespace {

bool Set(int resource, const char* name, rlim_t value, std::string* error) {
  rlimit rl{value, value};
  if (setrlimit(resource, &rl) != 0) {
    *error =
        std::string("setrlimit(") + name + ", " + std::to_string(value) + "): " + strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

bool LowerCpuLimit(int64_t timeout_s, std::string* error) {
  return Set(RLIMIT_CPU, "RLIMIT_CPU", timeout_s + kCpuSlackS, error);
}

int64_t AddressSpaceBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoll(line.substr(7)) * 1024;
  }
  return 0;
}

namespace {

// When memory runs short (a container's --memory), the kernel's OOM killer
// takes a run or a spare, never the supervisor or the zygote. Raising one's
// own score needs no privilege, but the file belongs to root while the
// process is not dumpable (the zygote is not, and its children inherit
// that): the runner is made dumpable for the one write, before any caller
// code exists, and credentials::ApplyInRunner makes it non-dumpable again.
// Measured in podman with --memory 256m: without this, a run that filled
// its tmpfs got the zygote killed ("the sandbox process died").
bool RaiseOomScore(std::string* error) {
  int was_dumpable = prctl(PR_GET_DUMPABLE);
  if (was_dumpable == 0) (void)prctl(PR_SET_DUMPABLE, 1);
  UniqueFd fd(open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC));
  bool ok = fd && write(fd.get(), "1000", 4) == 4;
  int saved = errno;
  if (was_dumpable == 0) (void)prctl(PR_SET_DUMPABLE, 0);
  if (!ok) *error = std::string("cannot raise oom_score_adj: ") + strerror(saved);
  return ok;
}

// RLIMIT_AS counts the address space a thread's stack reserves, resident or
// not: with glibc's 8 MiB a 128 MiB budget held 16 threads. A new thread's
// stack is a 64th of the budget, 1 to 8 MiB (8 MiB, as before, from 512 MiB
// up), so that 64 threads fit in any budget.
void SizeThreadStacks(int64_t memory_bytes) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  int64_t stack = std::clamp<int64_t>(memory_bytes / 64, kMiB, 8 * kMiB);
  pthread_attr_t attr;
  if (pthread_getattr_default_np(&attr) != 0) return;
  size_t current = 0;
  if (pthread_attr_getstacksize(&attr, &current) == 0 && current > static_cast<size_t>(stack)) {
    pthread_attr_setstacksize(&attr, static_cast<size_t>(stack));
    pthread_setattr_default_np(&attr);
  }
  pthread_attr_destroy(&attr);
}

}  // namespace

std::string Describe(const RunLimits& l) {
  return "address space +" + std::to_string(l.memory_bytes >> 20) + " MiB, files " +
         std::to_string(l.disk_bytes >> 20) + " MiB, " + std::to_string(l.max_processes) +
         " processes per uid, " + std::to_string(l.max_open_files) +
         " open files, cpu = timeout + " + std::to_string(kCpuSlackS) + " s";
}

bool ApplyInRunner(const RunLimits& l, int64_t timeout_s, std::string* error) {
  std::string why;
  if (!RaiseOomScore(&why)) {
    *error = why;
    return false;
  }
  SizeThreadStacks(l.memory_bytes);
  return Set(RLIMIT_AS, "RLIMIT_AS", AddressSpaceBytes() + l.memory_bytes, error) &&
         Set(RLIMIT_FSIZE, "RLIMIT_FSIZE", l.disk_bytes, error) &&
         Set(RLIMIT_NOFILE, "RLIMIT_NOFILE", l.max_open_files, error) &&
         Set(RLIMIT_NPROC, "RLIMIT_NPROC", l.max_processes, error) &&
         Set(RLIMIT_CPU, "RLIMIT_CPU", timeout_s + kCpuSlackS, error) &&
         Set(RLIMIT_CORE, "RLIMIT_CORE", 0, error);
}

}  // namespace mcpexec::sandbox::limits
