// Runs a check in a forked child that can make no thread: it takes a uid of
// its own (root is exempt from RLIMIT_NPROC) and a process limit this child
// alone fills, as the server is at its limit where runs keep its uid.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace mcpexec::testing {

// The child's exit status: what `check` returns (0: it held), 1 when the
// child could not take the uid or the limit, -1 when it did not exit.
inline int RunWithoutThreads(const std::function<int()>& check) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const uid_t uid = 65000 + static_cast<uid_t>(getpid() % 500);
    rlimit one{1, 1};
    if (setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0 ||
        setrlimit(RLIMIT_NPROC, &one) != 0) {
      _exit(1);
    }
    _exit(check());
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace mcpexec::testing
