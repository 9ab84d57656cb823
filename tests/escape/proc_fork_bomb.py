# escape: fork bomb: fork until something gives (the process limit must stop it far below 5000)
# expect: pass
# timeout: 60
# session-end: held more than half of MCP_EXEC_MAX_PROCESSES
# In a session the zygote may end the session first (the sessions together
# may hold at most half of MCP_EXEC_MAX_PROCESSES), which is the stronger end.
import errno
import os
import sys

LIMIT = 5000
# Children block on a pipe until we close its write end, so they all exit together.
r, w = os.pipe()
children, error = [], None
try:
    for _ in range(LIMIT):
        pid = os.fork()
        if pid == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        children.append(pid)
except OSError as e:
    error = e
os.close(w)
for pid in children:
    os.waitpid(pid, 0)
print(f"forked {len(children)} children before: {error!r}")
if error is None:
    print(f"ESCAPED: {LIMIT} processes and no limit hit")
    sys.exit(1)
# EAGAIN (BlockingIOError) is RLIMIT_NPROC or the pids cgroup; ENOMEM a memory limit.
if error.errno not in (errno.EAGAIN, errno.ENOMEM):
    print(f"UNEXPECTED: fork failed with {errno.errorcode.get(error.errno, error.errno)}")
    sys.exit(1)
# Everything was reaped: forking works again.
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print("PASS")
