# escape: kill(-1, SIGTERM/SIGHUP/SIGINT/SIGUSR1/...) from a forked child: nothing outside the run may receive them
# expect: pass
# timeout: 10
# Unlike SIGKILL these can be ignored, so the snippet survives its own broadcast and can
# report. The harness checks that the server still answers afterwards.
import errno
import os
import signal
import sys

if os.geteuid() == 0:
    print("ESCAPED: running as root; not sending kill(-1)")
    sys.exit(1)
SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1,
           signal.SIGUSR2, signal.SIGALRM, signal.SIGPIPE)
for s in SIGNALS:
    signal.signal(s, signal.SIG_IGN)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    out = []
    for s in SIGNALS:
        try:
            os.kill(-1, s)
            out.append(f"{s.name}:sent")
        except OSError as e:  # EPERM if a filter refuses kill(-1); ESRCH if nothing is reachable
            out.append(f"{s.name}:{errno.errorcode.get(e.errno, e.errno)}")
    os.write(w, " ".join(out).encode())
    os._exit(0)
os.close(w)
result = os.read(r, 4096).decode()
_, status = os.waitpid(pid, 0)
print("child:", result)
bad = [x for x in result.split() if x.split(":")[1] not in ("sent", "EPERM", "ESRCH")]
if bad or os.waitstatus_to_exitcode(status) != 0:
    print("UNEXPECTED:", bad, status)
    sys.exit(1)
print("PASS")
