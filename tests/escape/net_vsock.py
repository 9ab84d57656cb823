# escape: AF_VSOCK socket (talk to the hypervisor host, CID 2)
# expect: pass
import errno
import socket
import sys

try:
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
except OSError as e:
    # EPERM from seccomp (EAFNOSUPPORT would mean the filter let it through to the kernel).
    if e.errno != errno.EPERM:
        print(f"UNEXPECTED: socket(AF_VSOCK) failed with {errno.errorcode.get(e.errno, e.errno)}")
        sys.exit(1)
    print("PASS")
    sys.exit(0)
# Never connect: that would talk to the hypervisor. Creating the socket is already the failure.
s.close()
print("ESCAPED: socket(AF_VSOCK) was allowed")
sys.exit(1)
