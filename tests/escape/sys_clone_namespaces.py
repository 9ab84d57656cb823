# escape: clone() with namespace flags (new user/mount/pid/net/ipc/uts/cgroup namespace)
# expect: pass
# prelude: syscalls
SYS_clone = 56
FLAGS = {"CLONE_NEWUSER": 0x10000000, "CLONE_NEWNS": 0x00020000, "CLONE_NEWPID": 0x20000000,
         "CLONE_NEWNET": 0x40000000, "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUTS": 0x04000000,
         "CLONE_NEWCGROUP": 0x02000000}
for name, flag in FLAGS.items():
    try:
        # No CLONE_VM and no new stack: a success behaves like fork().
        pid = syscall(SYS_clone, flag | signal.SIGCHLD, 0, None, None, 0)
    except OSError as e:
        if e.errno != errno.EPERM:
            unexpected.append(f"clone({name}): {errno.errorcode.get(e.errno, e.errno)}, expected EPERM")
        continue
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    escaped.append(f"clone({name}) created a child")
# Plain fork must keep working (the same syscall without namespace flags).
pid = os.fork()
if pid == 0:
    os._exit(7)
assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7
report()
