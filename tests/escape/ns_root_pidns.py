# escape: (root posture) see the host's processes: the run must live in the zygote's pid namespace
# expect: pass
# posture: root
import os
import sys

ppid = os.getppid()
# The zygote is pid 1 of its namespace and the parent of every runner.
if ppid != 1:
    print(f"UNEXPECTED: parent is pid {ppid}, not the namespace's init (the zygote)")
    sys.exit(1)
# No host process may be visible: every pid in /proc must belong to the namespace, whose
# processes are the zygote, its runners and their children -- far fewer than a host's.
pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
comms = {}
for p in pids:
    try:
        with open(f"/proc/{p}/comm") as f:
            comms[p] = f.read().strip()
    except OSError:
        pass
print(f"{len(pids)} visible processes:", sorted(comms.items())[:20])
host_like = [c for c in comms.values() if c in ("systemd", "init", "kthreadd", "sshd", "dockerd", "containerd")]
if host_like or 2 in comms and comms[2] == "kthreadd":
    print(f"ESCAPED: host processes visible: {host_like}")
    sys.exit(1)
print("PASS")
