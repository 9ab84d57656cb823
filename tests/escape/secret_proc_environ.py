# escape: read the environment of pid 1, of our parent (the zygote) and of every visible process; grep all cmdlines
# expect: pass
# timeout: 30
import errno
import os
import sys

TOKEN = b"MCP_EXEC_AUTH_TOKEN"
# The host harness gives its stdio upstream (server-everything, a process of the
# server's uid) this variable in its "env": an upstream's secrets stay with it.
UPSTREAM_SECRET = b"ESCAPE_UPSTREAM_SECRET"
# EACCES: ptrace access check (other uid, non-dumpable, or Landlock's ptrace scoping);
# EPERM: an LSM; ESRCH/ENOENT: the process is gone or hidden.
DENIED = (errno.EACCES, errno.EPERM, errno.ESRCH, errno.ENOENT)
me = os.getpid()
problems, unexpected = [], []


def read(path):
    with open(path, "rb") as f:
        return f.read()


# The zygote (our parent; pid 1 in the root posture) and pid 1 must not be readable at all.
for pid in {1, os.getppid()} - {0, me}:
    try:
        data = read(f"/proc/{pid}/environ")
        problems.append(f"/proc/{pid}/environ readable ({len(data)} bytes)")
    except OSError as e:
        if e.errno not in DENIED:
            unexpected.append(f"/proc/{pid}/environ: {errno.errorcode.get(e.errno, e.errno)}")

# No visible process may expose the token, in its environment or its command line.
scanned = 0
for name in os.listdir("/proc"):
    if not name.isdigit():
        continue
    scanned += 1
    for leaf in ("environ", "cmdline"):
        try:
            data = read(f"/proc/{name}/{leaf}")
        except OSError:
            continue
        for secret in (TOKEN, UPSTREAM_SECRET):
            if secret in data:
                problems.append(f"{secret.decode()} in /proc/{name}/{leaf}")
print(f"scanned {scanned} processes")
if problems:
    print("ESCAPED:", "; ".join(problems))
    sys.exit(1)
if unexpected:
    print("UNEXPECTED:", "; ".join(unexpected))
    sys.exit(1)
print("PASS")
