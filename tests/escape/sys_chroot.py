# escape: chroot() (to the workdir, to /)
# expect: pass
# prelude: syscalls
expect("chroot(workdir)", (errno.EPERM,), lambda: os.chroot(os.getcwd()))
expect("chroot(/)", (errno.EPERM,), lambda: os.chroot("/"))
expect("pivot_root", (errno.EPERM,), lambda: syscall(155, b".", b"."))
report()
