# escape: create IPv6 sockets (datagram, and a listening stream socket on ::)
# expect: pass
import errno
import socket
import sys

for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
    try:
        s = socket.socket(socket.AF_INET6, kind)
    except OSError as e:
        if e.errno != errno.EPERM:  # seccomp: only AF_UNIX sockets
            print(f"UNEXPECTED: socket(AF_INET6, {kind!r}) failed with {errno.errorcode.get(e.errno, e.errno)}")
            sys.exit(1)
        continue
    s.close()
    print(f"ESCAPED: socket(AF_INET6, {kind!r}) was allowed")
    sys.exit(1)
print("PASS")
