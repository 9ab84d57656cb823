# escape: ptrace(PTRACE_TRACEME): make the parent our tracer (any ptrace request must kill)
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


SYS_ptrace, PTRACE_TRACEME = 101, 0
print("ptrace(PTRACE_TRACEME)", flush=True)
escaped("ptrace(PTRACE_TRACEME)", syscall(SYS_ptrace, PTRACE_TRACEME, 0, None, None))
