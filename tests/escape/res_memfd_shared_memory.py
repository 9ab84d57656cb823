# escape: shared memory outside RLIMIT_AS: memfd_create + posix_fallocate of 1 GiB
# expect: pass
# prelude: syscalls
expect("memfd_create", (errno.EPERM,), lambda: os.memfd_create("hold"))
expect("memfd_create (raw)", (errno.EPERM,), lambda: syscall(319, b"hold", 0))
# SysV shared memory: never granted either.
expect("shmget", (errno.EPERM,), lambda: syscall(29, 0, 2**30, 0o1000 | 0o600))
report()
