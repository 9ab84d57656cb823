# escape: connect to root-equivalent host services over pathname AF_UNIX sockets (docker, containerd, ...)
# expect: pass
# timeout: 15
import errno
import glob
import os
import socket
import sys

# Connecting to one of these is as good as root on the host. Landlock write rules do not
# cover connect() on a socket file, and a read-only mount does not either, so only a
# hidden path (mount namespace) or a missing socket stops it.
CRITICAL = [
    "/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
    "/run/k3s/containerd/containerd.sock", "/run/crio/crio.sock", "/var/run/crio/crio.sock",
    "/run/podman/podman.sock", "/run/systemd/private", "/run/snapd.socket",
] + glob.glob("/run/user/*/docker.sock") + glob.glob("/run/user/*/podman/podman.sock")

connected = []
for path in CRITICAL:
    for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
        s = socket.socket(socket.AF_UNIX, kind)
        s.settimeout(2)
        try:
            s.connect(path)
            connected.append(path)
        except OSError:
            pass
        finally:
            s.close()
if connected:
    print(f"ESCAPED: connected to {sorted(set(connected))}")
    sys.exit(1)

# Everything else listed by the kernel is only reported: a system dbus socket, journald's
# /dev/log, nscd... are reachable on most hosts and not a breach by themselves.
cwd = os.getcwd()
try:
    with open("/proc/net/unix") as f:
        next(f)
        paths = {l.split()[7] for l in f if len(l.split()) >= 8 and l.split()[7].startswith("/")}
except OSError:
    paths = set()
for path in sorted(paths):
    if path.startswith(cwd + "/"):
        continue
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(path)
        print(f"NOTE: reachable host socket {path}")
    except OSError as e:
        if e.errno not in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.ECONNREFUSED, errno.EPROTOTYPE):
            print(f"NOTE: {path}: {e}")
    finally:
        s.close()
print("PASS")
