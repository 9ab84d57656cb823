# escape: ptrace(PTRACE_ATTACH) the zygote (our parent; pid 1 in the root posture)
# expect: killed SIGSYS
# timeout: 10
import ctypes
import errno
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def syscall(nr, *args):
    return libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) if isinstance(a, int) else a for a in args))


def escaped(name, r):
    err = ctypes.get_errno()
    print(f"ESCAPED: {name} returned {r} (errno {errno.errorcode.get(err, err)}) instead of killing the process")
    sys.exit(1)


SYS_ptrace, PTRACE_ATTACH, PTRACE_DETACH = 101, 16, 17
target = 1 if os.getppid() in (0, 1) else os.getppid()
print(f"ptrace(PTRACE_ATTACH, {target})", flush=True)
r = syscall(SYS_ptrace, PTRACE_ATTACH, target, None, None)
if r == 0:
    syscall(SYS_ptrace, PTRACE_DETACH, target, None, None)
escaped("ptrace(PTRACE_ATTACH)", r)
