# escape: clone3() (its flags live in memory the filter cannot inspect, so it must be ENOSYS)
# expect: pass
# prelude: syscalls
SYS_clone3 = 435
# Size 0 would be EINVAL from the kernel: ENOSYS proves the filter answered.
expect("clone3(NULL, 0)", (errno.ENOSYS,), lambda: syscall(SYS_clone3, None, 0))


class clone_args(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("flags", "pidfd", "child_tid", "parent_tid", "exit_signal",
                                               "stack", "stack_size", "tls", "set_tid", "set_tid_size",
                                               "cgroup")]


args = clone_args(flags=0x10020000, exit_signal=signal.SIGCHLD)  # CLONE_NEWUSER | CLONE_NEWNS
try:
    pid = syscall(SYS_clone3, ctypes.byref(args), ctypes.sizeof(args))
except OSError as e:
    if e.errno != errno.ENOSYS:
        unexpected.append(f"clone3(CLONE_NEWUSER|CLONE_NEWNS): {errno.errorcode.get(e.errno, e.errno)}")
else:
    if pid == 0:  # no CLONE_VM: the child is a copy of us, like fork()
        os._exit(0)
    os.waitpid(pid, 0)
    escaped.append("clone3(CLONE_NEWUSER|CLONE_NEWNS) created a child")
report()
