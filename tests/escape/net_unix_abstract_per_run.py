# escape: see other runs' abstract unix socket names in /proc/net/unix (and squat them)
# expect: pass
# posture: root container
# skip-why: a network namespace per run; Docker's default profile refuses namespaces
# With a network namespace per run, the abstract names are the run's own. (Without
# namespaces, Docker's default profile, names are shared: see SECURITY.md.)
import os
import socket

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(b"\0mcp-escape-own-name")
with open("/proc/net/unix") as f:
    lines = f.read().splitlines()[1:]
names = [l.split()[-1] for l in lines if len(l.split()) >= 8]
others = [n for n in names if n != "@mcp-escape-own-name"]
print("NOTE: visible names", names[:10])
if others:
    print("ESCAPED: other sockets are visible:", others[:10])
    raise SystemExit(1)
print("PASS")
