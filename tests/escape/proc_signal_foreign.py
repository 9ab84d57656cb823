# escape: signal (with signal 0) every visible process that is not ours
# expect: pass
import errno
import os
import sys

if os.geteuid() == 0:
    print("ESCAPED: running as root")
    sys.exit(1)
me = os.getpid()  # nothing started yet: our process tree is just us
reached, unexpected, tried = [], [], 0
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) == me:
        continue
    tried += 1
    try:
        os.kill(int(name), 0)
        reached.append(int(name))
    except OSError as e:
        # EPERM: another uid or Landlock's signal scoping; ESRCH: exited meanwhile.
        if e.errno not in (errno.EPERM, errno.ESRCH):
            unexpected.append(f"{name}: {errno.errorcode.get(e.errno, e.errno)}")
print(f"tried {tried} processes")
if reached:
    def comm(p):
        try:
            with open(f"/proc/{p}/comm") as f:
                return f.read().strip()
        except OSError:
            return "?"
    print("ESCAPED: can signal", [(p, comm(p)) for p in reached[:20]])
    sys.exit(1)
if unexpected:
    print("UNEXPECTED:", unexpected)
    sys.exit(1)
print("PASS")
