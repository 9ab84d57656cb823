# escape: signal our parent (the zygote, or the runner's supervisor) with 0, SIGTERM, SIGKILL
# expect: pass
import errno
import os
import signal
import sys

ppid = os.getppid()
if ppid == 0:  # the parent lives in another pid namespace: it cannot even be named
    print("parent not visible from this pid namespace")
    print("PASS")
    sys.exit(0)
if os.geteuid() == 0:
    print("ESCAPED: running as root; not sending signals")
    sys.exit(1)
# Signal 0 first: if the parent can be reached at all, stop before doing damage.
for sig in (0, signal.SIGTERM, signal.SIGKILL):
    try:
        os.kill(ppid, sig)
    except OSError as e:
        # EPERM: another uid or Landlock's signal scoping; ESRCH: not visible.
        if e.errno not in (errno.EPERM, errno.ESRCH):
            print(f"UNEXPECTED: kill({ppid}, {sig}) failed with {errno.errorcode.get(e.errno, e.errno)}")
            sys.exit(1)
        continue
    print(f"ESCAPED: kill(parent {ppid}, {sig}) succeeded")
    sys.exit(1)
print("PASS")
