# escape: kexec_file_load: stage a new kernel from a file
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


SYS_kexec_file_load, KEXEC_FILE_UNLOAD = 320, 1
print("kexec_file_load", flush=True)
escaped("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, None, KEXEC_FILE_UNLOAD))
