# escape: open a TCP connection to [::1] (the server's port 8080 and a few others)
# expect: pass
# timeout: 10
import errno
import socket
import sys

PORTS = (8080, 80, 22, 443)

try:
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
except OSError as e:
    # seccomp: AF_INET6 is not AF_UNIX -> EPERM (never EAFNOSUPPORT: the filter runs first).
    if e.errno != errno.EPERM:
        print(f"UNEXPECTED: socket(AF_INET6) failed with {errno.errorcode.get(e.errno, e.errno)}, not EPERM")
        sys.exit(1)
    print("PASS")
    sys.exit(0)

s.close()
reached = []
for port in PORTS:
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as c:
        c.settimeout(2)
        try:
            c.connect(("::1", port))
            reached.append(port)
        except OSError:
            pass
if reached:
    print(f"ESCAPED: connected to [::1] ports {reached}")
else:
    print("UNEXPECTED: socket(AF_INET6) was allowed (no connection succeeded)")
sys.exit(1)
