# escape: signal pid 1 (the zygote in the root posture; the container's init otherwise)
# expect: pass
import errno
import os
import signal
import sys

if os.getpid() == 1:
    print("NOTE: we are pid 1 of our own pid namespace")
    print("PASS")
    sys.exit(0)
if os.geteuid() == 0:
    print("ESCAPED: running as root; not sending signals")
    sys.exit(1)
# A pid-namespace init silently drops signals it has no handler for, so kill() may
# "succeed" without effect: any success is treated as an escape (the permission check
# must refuse first). Signal 0 first so that a reachable pid 1 is not actually killed.
for sig in (0, signal.SIGTERM, signal.SIGKILL):
    try:
        os.kill(1, sig)
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ESRCH):
            print(f"UNEXPECTED: kill(1, {sig}) failed with {errno.errorcode.get(e.errno, e.errno)}")
            sys.exit(1)
        continue
    print(f"ESCAPED: kill(1, {sig}) succeeded")
    sys.exit(1)
print("PASS")
