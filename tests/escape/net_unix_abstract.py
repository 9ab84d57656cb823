# escape: abstract AF_UNIX sockets: own one may work; connecting to any other abstract socket must not
# expect: pass
# timeout: 15
import errno
import os
import socket
import sys

mine = f"\0mcp_escape_abstract_{os.getpid()}"

# Binding our own abstract name either works (and then we can talk to ourselves) or
# fails cleanly (EPERM from a filter, EACCES from an LSM).
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    srv.bind(mine)
    srv.listen(1)
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(mine)
    conn, _ = srv.accept()
    c.sendall(b"x")
    assert conn.recv(1) == b"x"
    conn.close()
    c.close()
    print("own abstract socket works")
except OSError as e:
    if e.errno not in (errno.EPERM, errno.EACCES):
        print(f"UNEXPECTED: own abstract socket failed with {errno.errorcode.get(e.errno, e.errno)}")
        sys.exit(1)
    print(f"own abstract socket refused: {e}")
srv.close()

# Every other abstract socket of this network namespace (X11, dbus, systemd, containerd,
# the host's services...) is outside the run: Landlock's abstract-unix scoping answers
# EPERM; ECONNREFUSED means it exists but is not listening -- either way no connection.
others = set()
try:
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            fields = line.split()
            if len(fields) >= 8 and fields[7].startswith("@"):
                others.add("\0" + fields[7][1:])
except OSError as e:
    print(f"/proc/net/unix unreadable: {e}")
others.discard(mine)
# A few well-known names even when /proc/net/unix shows nothing.
others.update({"\0/tmp/.X11-unix/X0", "\0/org/freedesktop/systemd1/notify", "\0mcp-exec"})

connected = []
for name in sorted(others):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
        s = socket.socket(socket.AF_UNIX, kind)
        s.settimeout(2)
        try:
            s.connect(name)
            connected.append(repr(name))
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.EACCES, errno.ECONNREFUSED, errno.EPROTOTYPE,
                               errno.ENOENT):
                print(f"NOTE: connect({name!r}) failed with {errno.errorcode.get(e.errno, e.errno)}")
        finally:
            s.close()
if connected:
    print(f"ESCAPED: connected to abstract sockets outside the run: {sorted(set(connected))}")
    sys.exit(1)
print("PASS")
