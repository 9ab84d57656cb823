# escape: open file descriptors until the table is full (the limit is at most 1024)
# expect: pass
import errno
import os
import sys

fds, error = [], None
try:
    for _ in range(1 << 20):
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    error = e
highest = max(fds) if fds else -1
for fd in fds:
    os.close(fd)
print(f"opened {len(fds)} descriptors (highest {highest}) before {error!r}")
if error is None or error.errno != errno.EMFILE:
    print(f"UNEXPECTED: expected EMFILE, got {error!r}")
    sys.exit(1)
if len(fds) > 1024:
    print(f"ESCAPED: {len(fds)} descriptors open, limit should be <= 1024")
    sys.exit(1)
print("PASS")
