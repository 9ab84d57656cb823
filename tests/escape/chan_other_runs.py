# escape: find and use a tool channel that is not this run's (sockets of other processes through /proc, fds inherited past the run's own)
# expect: pass
# upstreams: yes
# posture: root container
# skip-why: without Landlock the docker posture refuses a stdio upstream (its runs could read the upstream's /proc/<pid>/environ)
import os
import socket

import mcp_exec_runtime

own = mcp_exec_runtime.tools._tools["fd"]
mine = []
for name in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink("/proc/self/fd/" + name)
    except OSError:
        continue
    if target.startswith("socket:"):
        mine.append(int(name))
print("NOTE: own sockets", mine, "channel", own)
extra = [fd for fd in mine if fd != own and fd != own + 1]
if extra:
    print("ESCAPED: sockets besides the channel (and a session's cell socket):", extra)
    raise SystemExit(1)
opened = []
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
    except OSError:
        continue
    for fd in fds:
        path = "/proc/%s/fd/%s" % (pid, fd)
        try:
            if not os.readlink(path).startswith("socket:"):
                continue
            opened.append((pid, fd, os.open(path, os.O_RDWR)))
        except OSError:
            pass
if opened:
    print("ESCAPED: opened another process's socket:", opened[:5])
    raise SystemExit(1)
try:
    fd = os.pidfd_open(1)
    print("NOTE: pidfd of pid 1 in the run's namespace:", fd)
except OSError as e:
    print("NOTE: pidfd_open:", e)
print("PASS")
