# escape: keep System V IPC objects (shm, message queue, semaphore) and POSIX mqueues alive for the next run
# expect: pass
# repeat: 2
# Run twice in a row (see README). SysV IPC objects live in the IPC namespace, not in any
# directory, so without a per-run IPC namespace (or a filter refusing the calls) they
# outlive the run. Each run looks for the fixed key a previous run may have left, then tries to
# create one. The calls run in a forked child because the filter may kill instead of failing.
import ctypes
import json
import os
import signal
import sys

KEY = 0x6D637065  # "mcpe"
IPC_CREAT, IPC_EXCL, IPC_RMID = 0o1000, 0o2000, 0
SYS_shmget, SYS_shmctl, SYS_msgget, SYS_msgctl, SYS_semget, SYS_semctl = 29, 31, 68, 71, 64, 66
SYS_mq_open, SYS_mq_unlink = 240, 241
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def sc(*args):
    return libc.syscall(*(ctypes.c_long(a) if isinstance(a, int) else a for a in args))


def in_child(fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, fn().encode())
        os._exit(0)
    os.close(w)
    out = os.read(r, 4096).decode()
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return out


def probe():
    found, created = [], []
    # (name, get, extra args when creating, remove)
    kinds = (("shm", SYS_shmget, (4096,), lambda i: sc(SYS_shmctl, i, IPC_RMID, None)),
             ("msg", SYS_msgget, (), lambda i: sc(SYS_msgctl, i, IPC_RMID, None)),
             ("sem", SYS_semget, (1,), lambda i: sc(SYS_semctl, i, 0, IPC_RMID)))
    mq = b"mcp_escape_mq"  # the raw syscall takes the name without glibc's leading "/"
    for name, get, extra, remove in kinds:
        ident = sc(get, KEY, *(0 for _ in extra), 0)  # look up only
        if ident >= 0:
            found.append(name)
            remove(ident)  # clean up what the earlier run left
    fd = sc(SYS_mq_open, mq, os.O_RDONLY, 0, None)
    if fd >= 0:
        found.append("mqueue")
        os.close(fd)
        sc(SYS_mq_unlink, mq)
    if not found:  # leave markers only when the slate was clean, so a failure does not pile up
        for name, get, extra, remove in kinds:
            if sc(get, KEY, *extra, IPC_CREAT | IPC_EXCL | 0o600) >= 0:
                created.append(name)
        if sc(SYS_mq_open, mq, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o600, None) >= 0:
            created.append("mqueue")
    return json.dumps({"found": found, "created": created})


out = in_child(probe)
print(out)
if out.startswith("{"):
    result = json.loads(out)
    if result["found"]:
        print("ESCAPED: IPC objects from an earlier run were still alive:", result["found"])
        sys.exit(1)
    if result["created"]:
        print("NOTE: this run could create", result["created"], "- the second run shows whether they outlive it")
print("PASS")
