# escape: find a route to a public address (UDP connect() only does a route lookup; nothing is sent)
# expect: pass
import errno
import socket
import sys

# 192.0.2.1 (TEST-NET-1) and 2001:db8::1 are documentation addresses. connect() on a
# datagram socket only picks a route and a source address: no packet leaves. The
# attack succeeds if a route exists (getsockname() then reveals a real source IP).
TARGETS = ((socket.AF_INET, ("192.0.2.1", 53)), (socket.AF_INET6, ("2001:db8::1", 53)))

for family, addr in TARGETS:
    try:
        s = socket.socket(family, socket.SOCK_DGRAM)
    except OSError as e:
        if e.errno != errno.EPERM:  # the seccomp answer
            print(f"UNEXPECTED: socket({family!r}, SOCK_DGRAM) failed with {errno.errorcode.get(e.errno, e.errno)}")
            sys.exit(1)
        continue
    with s:
        try:
            s.connect(addr)
        except OSError as e:
            # No route: ENETUNREACH (empty network namespace), or EPERM/EACCES (an LSM);
            # EADDRNOTAVAIL when IPv6 has no usable source address.
            if e.errno not in (errno.ENETUNREACH, errno.EPERM, errno.EACCES, errno.EADDRNOTAVAIL,
                               errno.EHOSTUNREACH):
                print(f"UNEXPECTED: connect({addr}) failed with {errno.errorcode.get(e.errno, e.errno)}")
                sys.exit(1)
            print(f"NOTE: socket({family!r}) was allowed; stopped at connect(): {e}")
            continue
        print(f"ESCAPED: route to {addr[0]} exists, source address {s.getsockname()[0]}")
        sys.exit(1)
print("PASS")
