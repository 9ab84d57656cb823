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
with s:
    s.settimeout(2)
    try:
        s.connect((2, 22))  # VMADDR_CID_HOST
        print("ESCAPED: connected to the vsock host")
    except OSError as e:
        print(f"UNEXPECTED: socket(AF_VSOCK) was allowed (connect: {e})")
sys.exit(1)
