# escape: open a TCP connection to 127.0.0.1 (the server's own port 8080 and a few others)
# expect: pass
# timeout: 10
import errno
import socket
import sys

PORTS = (8080, 80, 22, 443, 5432, 6379)

try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
except OSError as e:
    # seccomp: socket() is allowed for AF_UNIX only; every other family -> EPERM.
    if e.errno != errno.EPERM:
        print(f"UNEXPECTED: socket(AF_INET) failed with {errno.errorcode.get(e.errno, e.errno)}, not EPERM")
        sys.exit(1)
    print("PASS")
    sys.exit(0)

# The seccomp layer is missing. Find out whether anything else stops the connection.
s.close()
reached = []
for port in PORTS:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as c:
        c.settimeout(2)
        try:
            c.connect(("127.0.0.1", port))
            reached.append(port)
        except OSError:
            pass
if reached:
    print(f"ESCAPED: connected to 127.0.0.1 ports {reached}")
else:
    print("UNEXPECTED: socket(AF_INET) was allowed (no connection succeeded)")
sys.exit(1)
