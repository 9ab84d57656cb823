# escape: resolve a public hostname (reach a DNS resolver, nscd or systemd-resolved)
# expect: pass
# timeout: 15
import socket
import sys

# example.com has public A/AAAA records; resolving it proves a resolver was reached,
# unless the hosts file names it (then a hosts-file answer is fine).
NAME = "example.com"

with open("/etc/hosts") as f:
    in_hosts = any(NAME in line.split()[1:] for line in f if not line.lstrip().startswith("#"))

try:
    infos = socket.getaddrinfo(NAME, 443, proto=socket.IPPROTO_TCP)
except socket.gaierror as e:
    print(f"resolution failed as expected: {e}")
    infos = []
except OSError as e:
    print(f"resolution failed as expected: {e!r}")
    infos = []

if infos and not in_hosts:
    print(f"ESCAPED: {NAME} resolved to {sorted({i[4][0] for i in infos})}")
    sys.exit(1)

# Local names may or may not resolve from /etc/hosts; only check that it does not hang or crash.
try:
    socket.getaddrinfo("localhost", 80)
except OSError:
    pass
# Numeric hosts never need a resolver and must keep working.
assert socket.getaddrinfo("127.0.0.1", 80, socket.AF_INET, socket.SOCK_STREAM,
                          flags=socket.AI_NUMERICHOST)[0][4] == ("127.0.0.1", 80)
print("PASS")
