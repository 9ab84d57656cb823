# escape: list or open the file descriptors (and cwd/root/exe links) of every other visible process
# expect: pass
# timeout: 30
import errno
import os
import sys

# Our process tree is just us at this point (nothing started yet). For every other pid the
# fd directory, the fd links and cwd/root must be refused (EACCES: ptrace access check or
# root-owned entries of a non-dumpable process; EPERM: LSM) or gone (ENOENT/ESRCH).
DENIED = (errno.EACCES, errno.EPERM, errno.ENOENT, errno.ESRCH)
me = os.getpid()
escaped, unexpected = [], []


def check(what, fn):
    try:
        result = fn()
    except OSError as e:
        if e.errno not in DENIED:
            unexpected.append(f"{what}: {errno.errorcode.get(e.errno, e.errno)}")
        return
    escaped.append(f"{what} -> {result!r}"[:200])


others = [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) != me]
for pid in others:
    base = f"/proc/{pid}"
    if not os.path.exists(f"{base}/exe") and not os.path.exists(f"{base}/cmdline"):
        continue
    check(f"listdir {base}/fd", lambda: os.listdir(f"{base}/fd"))
    check(f"listdir {base}/fdinfo", lambda: os.listdir(f"{base}/fdinfo"))
    check(f"listdir {base}/root/", lambda: os.listdir(f"{base}/root/"))
    check(f"listdir {base}/cwd/", lambda: os.listdir(f"{base}/cwd/"))
    # Opening through the magic links without listing first (the zygote's control socket,
    # the runner's status fd 1000, the server's pipes...).
    for fd in (0, 1, 2, 3, 4, 5, 1000):
        def open_fd(fd=fd):
            f = os.open(f"{base}/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK)
            os.close(f)
            return "opened"
        check(f"open {base}/fd/{fd}", open_fd)
# Kernel threads (visible only when sharing a pid namespace with the host) have empty, readable fd
# dirs on some kernels: only non-empty results above count, so drop empty listings.
escaped = [e for e in escaped if not e.endswith("-> []")]
print(f"checked {len(others)} other processes")
if escaped:
    print("ESCAPED:", "; ".join(escaped[:20]))
    sys.exit(1)
if unexpected:
    print("UNEXPECTED:", "; ".join(unexpected[:20]))
    sys.exit(1)
print("PASS")
