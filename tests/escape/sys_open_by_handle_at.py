# escape: open_by_handle_at: the 'shocker' breakout (open the host root by inode handle)
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


class file_handle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * 8)]


SYS_open_by_handle_at = 304
# FILEID_INO32_GEN (1) for inode 2, generation 0: the root directory of an ext4 filesystem.
h = file_handle(8, 1, (ctypes.c_ubyte * 8)(2, 0, 0, 0, 0, 0, 0, 0))
mount_fd = os.open(os.getcwd(), os.O_RDONLY | os.O_DIRECTORY)
print("open_by_handle_at", flush=True)
escaped("open_by_handle_at", syscall(SYS_open_by_handle_at, mount_fd, ctypes.byref(h), os.O_RDONLY))
