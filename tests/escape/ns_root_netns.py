# escape: (root posture) see or use the host's network interfaces from the run's network namespace
# expect: pass
# posture: root
# The zygote and every run sit in a network namespace of their own whose only interface is lo.
import sys

with open("/proc/net/dev") as f:
    ifaces = sorted(line.split(":", 1)[0].strip() for line in f.readlines()[2:])
print("interfaces:", ifaces)
if ifaces != ["lo"]:
    print(f"ESCAPED: host interfaces visible: {ifaces}")
    sys.exit(1)
# Nothing routes anywhere: the IPv4 routing table is empty (lo is down).
with open("/proc/net/route") as f:
    routes = f.readlines()[1:]
if routes:
    print("ESCAPED: routes present:", [r.split()[:3] for r in routes])
    sys.exit(1)
print("PASS")
