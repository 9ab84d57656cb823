# escape: read other runs' processes (their subprocesses' argv: a common place for secrets)
# expect: pass
# timeout: 30
import errno
import os

me = os.getpid()
# Our own tree: ourselves, and the init of our own pid namespace when we are its pid 2.
own = {me}
if me == 2 and os.getppid() == 1:
    own.add(1)
# And our own threads (the runtime keeps one that flushes our streams): a
# thread id opens in /proc like a pid, but it is this process, not another.
own |= {int(t) for t in os.listdir("/proc/self/task")}
# And, in our own pid namespace, our memory holder: the init's child named
# mcp-exec-holder, cloned by our runner after its lockdown with our memory
# (SECURITY.md: a run's end is answered before its memory is freed). Only
# there: nothing of another run is in this namespace.
if me == 2 and os.getppid() == 1:
    for n in os.listdir("/proc"):
        try:
            with open(f"/proc/{n}/stat") as f:
                name, rest = f.read().rsplit(")", 1)
            if name.endswith("(mcp-exec-holder") and rest.split()[1] == "1":
                own.add(int(n))
        except (OSError, ValueError, IndexError):
            pass
readable = []
try:
    visible = {int(n) for n in os.listdir("/proc") if n.isdigit()}
    print("NOTE: visible pids", sorted(visible)[:20])
except OSError as e:
    print("NOTE: /proc cannot be listed:", errno.errorcode.get(e.errno, e.errno))
    visible = set()
# Whether listed or not, try every pid of a small host.
for pid in sorted(visible | set(range(1, 5000))):
    if pid in own:
        continue
    for what in ("cmdline", "environ", "status"):
        try:
            with open(f"/proc/{pid}/{what}", "rb") as f:
                data = f.read(200)
        except OSError:
            continue
        readable.append(f"{pid}/{what}: {data[:60]!r}")
if readable:
    print("ESCAPED: other processes are readable:", readable[:10])
    raise SystemExit(1)
print("PASS")
