// Tests that need a policy fork a child, apply it there, make one call and
// report how it ended: an errno, success, or the signal that killed it.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>

namespace mcpexec::testing {

struct Outcome {
  bool killed = false;
  int signal = 0;
  int error = 0;  // 0: the call succeeded
  std::string ToString() const {
    if (killed) return "killed by signal " + std::to_string(signal);
    return error ? "errno " + std::to_string(error) + " (" + strerror(error) + ")" : "success";
  }
};

// apply: installs the layer in the child (returns false on failure, which
// is reported as errno 255). call: returns 0 on success or an errno.
inline Outcome InChild(const std::function<bool()>& apply, const std::function<int()>& call) {
  pid_t pid = fork();
  if (pid == 0) {
    if (!apply()) _exit(255);
    int e = call();
    _exit(e > 254 ? 254 : e);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Outcome o;
  if (WIFSIGNALED(status)) {
    o.killed = true;
    o.signal = WTERMSIG(status);
  } else {
    o.error = WEXITSTATUS(status);
  }
  return o;
}

// The errno of a raw result: 0 when r >= 0.
inline int Errno(long r) { return r < 0 ? errno : 0; }

}  // namespace mcpexec::testing
