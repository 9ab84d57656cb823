# escape: AF_NETLINK sockets (NETLINK_ROUTE needs no privilege: it lists interfaces, routes, neighbours)
# expect: pass
import errno
import socket
import sys

PROTOCOLS = {
    "NETLINK_ROUTE": 0,
    "NETLINK_SOCK_DIAG": 4,   # lists every socket of the namespace
    "NETLINK_AUDIT": 9,
    "NETLINK_KOBJECT_UEVENT": 15,
    "NETLINK_GENERIC": 16,
}
for name, proto in PROTOCOLS.items():
    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
    except OSError as e:
        # EPERM from seccomp; EPROTONOSUPPORT cannot happen because the filter runs first.
        if e.errno != errno.EPERM:
            print(f"UNEXPECTED: AF_NETLINK {name} failed with {errno.errorcode.get(e.errno, e.errno)}")
            sys.exit(1)
        continue
    s.close()
    print(f"ESCAPED: AF_NETLINK {name} socket created")
    sys.exit(1)
print("PASS")
