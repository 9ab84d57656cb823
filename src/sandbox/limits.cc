#include "sandbox/limits.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

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

bool ApplyInRunner(const RunLimits& l, int64_t timeout_s, std::string* error) {
  // When memory runs short (a container's --memory), the kernel's OOM killer
  // takes a run, never the supervisor or the zygote. Raising one's own score
  // needs no privilege.
  int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)!write(fd, "1000", 4);
    close(fd);
  }
  return Set(RLIMIT_AS, "RLIMIT_AS", AddressSpaceBytes() + l.memory_bytes, error) &&
         Set(RLIMIT_FSIZE, "RLIMIT_FSIZE", l.disk_bytes, error) &&
         Set(RLIMIT_NOFILE, "RLIMIT_NOFILE", l.max_open_files, error) &&
         Set(RLIMIT_NPROC, "RLIMIT_NPROC", l.max_processes, error) &&
         Set(RLIMIT_CPU, "RLIMIT_CPU", timeout_s + kCpuSlackS, error) &&
         Set(RLIMIT_CORE, "RLIMIT_CORE", 0, error);
}

}  // namespace mcpexec::sandbox::limits
