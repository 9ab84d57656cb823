# escape: every other socket family (AF_ALG crypto, AF_BLUETOOTH, AF_CAN, AF_TIPC, AF_XDP, AF_KEY, ...)
# expect: pass
import errno
import socket
import sys

AF_UNIX = socket.AF_UNIX
failures = []
# Linux families are 0..45; AF_UNIX (1) is the only one the filter allows.
for family in range(0, 46):
    if family == AF_UNIX:
        continue
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_SEQPACKET):
        try:
            s = socket.socket(family, kind, 0)
        except OSError as e:
            if e.errno != errno.EPERM:
                failures.append(f"family {family} type {int(kind)}: {errno.errorcode.get(e.errno, e.errno)}")
            continue
        s.close()
        print(f"ESCAPED: socket(family={family}, type={int(kind)}) created")
        sys.exit(1)
if failures:
    print("UNEXPECTED: not EPERM:", "; ".join(failures))
    sys.exit(1)
print("PASS")
