# escape: userfaultfd (syscall and /dev/userfaultfd): the kernel-exploit helper
# expect: pass
# prelude: syscalls
SYS_userfaultfd, O_CLOEXEC, UFFD_USER_MODE_ONLY = 323, 0o2000000, 1
expect("userfaultfd(O_CLOEXEC)", (errno.EPERM,), lambda: syscall(SYS_userfaultfd, O_CLOEXEC))
expect("userfaultfd(UFFD_USER_MODE_ONLY)", (errno.EPERM,),
       lambda: syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY))
if os.path.exists("/dev/userfaultfd"):
    expect("open /dev/userfaultfd", (errno.EACCES, errno.EPERM, errno.ENOENT),
           lambda: os.open("/dev/userfaultfd", os.O_RDWR))
report()
