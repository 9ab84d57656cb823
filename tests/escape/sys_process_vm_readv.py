# escape: process_vm_readv: read the zygote's memory (same layout as ours: it forked us)
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


class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


SYS_process_vm_readv = 310
buf = ctypes.create_string_buffer(16)
local = iovec(ctypes.cast(buf, ctypes.c_void_p), 16)
remote = iovec(id(None), 16)  # Py_None lives at the same address in the zygote
target = os.getppid() or 1
print(f"process_vm_readv({target})", flush=True)
r = syscall(SYS_process_vm_readv, target, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
escaped("process_vm_readv", r)
