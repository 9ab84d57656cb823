# escape: process_vm_writev into the zygote (zero-length: nothing is written even if allowed)
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


SYS_process_vm_writev = 311
target = os.getppid() or 1
print(f"process_vm_writev({target})", flush=True)
# The filter kills on the syscall number whatever the arguments; empty vectors keep it harmless.
escaped("process_vm_writev", syscall(SYS_process_vm_writev, target, None, 0, None, 0, 0))
