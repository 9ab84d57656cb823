# escape: finit_module: load a kernel module from a file descriptor
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


SYS_finit_module = 313
fd = os.open("/dev/null", os.O_RDONLY)
print("finit_module", flush=True)
escaped("finit_module", syscall(SYS_finit_module, fd, b"", 0))
