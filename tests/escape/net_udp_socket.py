# escape: create a UDP socket (DNS, exfiltration) and bind it
# expect: pass
import errno
import socket
import sys

try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
except OSError as e:
    if e.errno != errno.EPERM:  # seccomp: only AF_UNIX sockets
        print(f"UNEXPECTED: socket(AF_INET, SOCK_DGRAM) failed with {errno.errorcode.get(e.errno, e.errno)}")
        sys.exit(1)
    print("PASS")
    sys.exit(0)
with s:
    try:
        s.bind(("127.0.0.1", 0))  # any successful bind is the escape
        print(f"ESCAPED: UDP socket created and bound to {s.getsockname()}")
    except OSError as e:
        print(f"UNEXPECTED: socket(AF_INET, SOCK_DGRAM) was allowed (bind: {e})")
sys.exit(1)
