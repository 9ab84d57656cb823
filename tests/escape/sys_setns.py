# escape: setns() into our own or another process's namespaces (by /proc ns file and by pidfd)
# expect: pass
# prelude: syscalls
SYS_setns, SYS_pidfd_open = 308, 434
opened = 0
for ns in ("user", "mnt", "net", "pid", "ipc", "uts", "cgroup", "time"):
    for pid in ("self", "1", str(os.getppid())):
        try:
            fd = os.open(f"/proc/{pid}/ns/{ns}", os.O_RDONLY)
        except OSError as e:
            if pid == "self":
                print(f"NOTE: /proc/self/ns/{ns}: {e.strerror}")
            continue
        opened += 1
        expect(f"setns(/proc/{pid}/ns/{ns})", (errno.EPERM,), lambda fd=fd: syscall(SYS_setns, fd, 0))
        os.close(fd)
print(f"tried {opened} namespace files")
# Joining all namespaces of the parent through a pidfd (pidfd_open may itself be refused).
def via_pidfd():
    pidfd = syscall(SYS_pidfd_open, os.getppid() or 1, 0)
    return syscall(SYS_setns, pidfd, 0x7E020000)  # every CLONE_NEW* flag
expect_in_child("setns(pidfd of the parent)", (errno.EPERM, errno.ENOSYS, errno.EACCES, errno.ESRCH), via_pidfd)
report()
