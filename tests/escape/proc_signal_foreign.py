# escape: signal (with signal 0) every visible process that is not ours
# expect: pass
import errno
import os
import sys

if os.geteuid() == 0:
    print("ESCAPED: running as root")
    sys.exit(1)
me = os.getpid()  # nothing started yet: our process tree is just us


# Besides, in our own pid namespace, our memory holder: the init's child
# named mcp-exec-holder, cloned by our runner after its lockdown with our
# memory (SECURITY.md: a run's end is answered before its memory is freed).
# Only there: nothing of another run is in this namespace.
def our_holder(pid):
    if not (me == 2 and os.getppid() == 1):
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            name, rest = f.read().rsplit(")", 1)
        return name.endswith("(mcp-exec-holder") and rest.split()[1] == "1"
    except (OSError, ValueError, IndexError):
        return False


reached, unexpected, tried = [], [], 0
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) == me or our_holder(name):
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
