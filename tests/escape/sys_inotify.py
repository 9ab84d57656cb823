# escape: take the uid's whole inotify quota from other runs, or watch what they and the host open
# expect: pass
# prelude: syscalls
expect("inotify_init1", (errno.EPERM,), lambda: syscall(294, 0))
expect("inotify_init", (errno.EPERM,), lambda: syscall(253))
report()
