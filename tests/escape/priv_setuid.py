# escape: become root with setuid/setgid/setgroups/setres*id, or change ids at all
# expect: pass
import errno
import os
import sys

escaped, unexpected = [], []
uid, gid = os.getuid(), os.getgid()
ATTEMPTS = [
    ("setuid(0)", lambda: os.setuid(0)),
    ("setgid(0)", lambda: os.setgid(0)),
    ("seteuid(0)", lambda: os.seteuid(0)),
    ("setegid(0)", lambda: os.setegid(0)),
    ("setreuid(0, 0)", lambda: os.setreuid(0, 0)),
    ("setregid(0, 0)", lambda: os.setregid(0, 0)),
    ("setresuid(0, 0, 0)", lambda: os.setresuid(0, 0, 0)),
    ("setresgid(0, 0, 0)", lambda: os.setresgid(0, 0, 0)),
    ("setgroups([0])", lambda: os.setgroups([0])),
]
for what, fn in ATTEMPTS:
    try:
        fn()
    except OSError as e:
        if e.errno != errno.EPERM:
            unexpected.append(f"{what}: {errno.errorcode.get(e.errno, e.errno)}")
        continue
    escaped.append(what)
# The seccomp filter refuses the whole set*id family, even a no-op to our own ids
# (without it these succeed harmlessly: only reported as a missing layer).
for what, fn in (("setuid(own uid)", lambda: os.setuid(uid)), ("setgid(own gid)", lambda: os.setgid(gid)),
                 ("setgroups([])", lambda: os.setgroups([]))):
    try:
        fn()
        unexpected.append(f"{what} succeeded: the set*id filter is missing")
    except OSError as e:
        if e.errno != errno.EPERM:
            unexpected.append(f"{what}: {errno.errorcode.get(e.errno, e.errno)}")
if os.geteuid() == 0 or os.getegid() == 0:
    escaped.append("euid/egid is 0")
if escaped:
    print("ESCAPED:", "; ".join(escaped))
    sys.exit(1)
if unexpected:
    print("UNEXPECTED:", "; ".join(unexpected))
    sys.exit(1)
print("PASS")
