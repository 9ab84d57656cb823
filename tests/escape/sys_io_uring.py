# escape: io_uring: set up a ring (its operations bypass the seccomp filter)
# expect: pass
# prelude: syscalls
SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register = 425, 426, 427
params = (ctypes.c_uint8 * 120)()
ALLOWED = (errno.ENOSYS, errno.EPERM)
expect("io_uring_setup(8)", ALLOWED, lambda: syscall(SYS_io_uring_setup, 8, params))
# Without a ring these only reach EBADF; the filter should answer first (or kill).
expect_in_child("io_uring_enter(-1)", ALLOWED, lambda: syscall(SYS_io_uring_enter, -1, 0, 0, 0, None, 0))
expect_in_child("io_uring_register(-1)", ALLOWED, lambda: syscall(SYS_io_uring_register, -1, 0, None, 0))
report()
