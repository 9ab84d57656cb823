# escape: outlive the deadline: setsid() children, a double-forked daemon ignoring SIGTERM/SIGHUP
# expect: timed_out
# timeout: 3
# Every survivor runs as argv[0] "mcp_escape_survivor" so the harness can look for it in
# /proc/*/cmdline host-wide after the run (none may exist).
import os
import shutil
import signal
import subprocess
import time

SLEEP = shutil.which("sleep") or "/bin/sleep"
# 1. A child in its own session.
subprocess.Popen(["mcp_escape_survivor", "1000"], executable=SLEEP, start_new_session=True)
# 2. A classic daemon: fork, setsid, fork again, parent exits; it ignores the polite signals
#    (ignored dispositions survive exec).
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        os.execv(SLEEP, ["mcp_escape_survivor", "1000"])
    os._exit(0)
os.waitpid(pid, 0)
print("survivors started", flush=True)
while True:
    time.sleep(1)
