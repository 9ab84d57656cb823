# escape: hold or regain any capability (own process, forked child, exec'd child, ambient raise)
# expect: pass
# prelude: kernel_status
import ctypes
import os
import subprocess
import sys

CAP_KEYS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


def caps(text):
    fields = dict(l.split(":", 1) for l in text.splitlines() if ":" in l)
    return {k: int(fields[k].strip(), 16) for k in CAP_KEYS}



bad = []
with open("/proc/self/status") as f:
    mine = caps(f.read())
# The exec'd child asks the kernel itself (capget): where runs have no pid namespace of
# their own, a child may not read /proc/self (Landlock allows only the runner's).
out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True).stdout
fields = dict(l.split(" ", 1) for l in out.splitlines())
child = {k: int(fields[k], 16) for k in ("CapEff", "CapPrm", "CapInh")}
for who, c in (("runner", mine), ("exec'd child", child)):
    nonzero = {k: hex(v) for k, v in c.items() if v}
    if nonzero:
        bad.append(f"{who} holds capabilities {nonzero}")

# Raising an ambient capability needs it in the permitted and inheritable sets: EPERM.
# Done in a forked child: prctl is only expected to fail, but a filter may kill instead.
PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_RAW = 47, 2, 13
pid = os.fork()
if pid == 0:
    libc = ctypes.CDLL(None, use_errno=True)
    r = libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_RAW, 0, 0)
    os._exit(3 if r == 0 else 0)
_, status = os.waitpid(pid, 0)
if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3:
    bad.append("PR_CAP_AMBIENT_RAISE(CAP_NET_RAW) succeeded")

if bad:
    print("ESCAPED:", "; ".join(bad))
    sys.exit(1)
print("PASS")
