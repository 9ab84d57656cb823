# escape: AF_PACKET socket (sniff or inject link-layer frames)
# expect: pass
import errno
import socket
import sys

ETH_P_ALL = 0x0003
for kind in (socket.SOCK_RAW, socket.SOCK_DGRAM):
    try:
        s = socket.socket(socket.AF_PACKET, kind, socket.htons(ETH_P_ALL))
    except OSError as e:
        if e.errno != errno.EPERM:
            print(f"UNEXPECTED: socket(AF_PACKET, {kind!r}) failed with {errno.errorcode.get(e.errno, e.errno)}")
            sys.exit(1)
        continue
    s.close()
    print(f"ESCAPED: socket(AF_PACKET, {kind!r}) created")
    sys.exit(1)
print("PASS")
