# escape: kill(-1, SIGKILL) from a forked child: must reach only this run's own processes
# expect: killed SIGKILL
# timeout: 10
# kill(-1) signals every process the caller may signal. Inside the sandbox that is exactly
# the run's own processes, so it also kills this snippet's main process: the run ends by
# SIGKILL. The harness then checks that the server (and the zygote) still answer. If the
# filter refuses kill(-1) (EPERM), the child kills its parent itself so the outcome is the
# same either way; the evidence is whether anything outside died.
import os
import signal
import sys
import time

if os.geteuid() == 0:
    print("ESCAPED: running as root; not sending kill(-1)")
    sys.exit(1)
print("forking the killer", flush=True)
pid = os.fork()
if pid == 0:
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError as e:
        os.write(1, f"kill(-1) refused: {e}\n".encode())
        os.kill(os.getppid(), signal.SIGKILL)
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(2)
print("UNEXPECTED: the main process survived kill(-1, SIGKILL) from its own child")
sys.exit(1)
