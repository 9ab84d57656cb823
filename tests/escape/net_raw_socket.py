# escape: raw IP sockets and unprivileged ICMP "ping" sockets
# expect: pass
import errno
import socket
import sys

CASES = (
    ("AF_INET SOCK_RAW ICMP", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    ("AF_INET SOCK_RAW RAW", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW),
    ("AF_INET6 SOCK_RAW ICMPV6", socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6),
    # Ping sockets need no capability when net.ipv4.ping_group_range includes our gid.
    ("AF_INET SOCK_DGRAM ICMP (ping socket)", socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP),
)

for name, family, kind, proto in CASES:
    try:
        s = socket.socket(family, kind, proto)
    except OSError as e:
        if e.errno != errno.EPERM:  # seccomp answers before the kernel checks CAP_NET_RAW
            print(f"UNEXPECTED: {name} failed with {errno.errorcode.get(e.errno, e.errno)}")
            sys.exit(1)
        continue
    s.close()
    print(f"ESCAPED: {name} socket created")
    sys.exit(1)
print("PASS")
