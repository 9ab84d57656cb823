# escape: unshare() into new user/mount/net/pid/ipc/uts/cgroup/time namespaces
# expect: pass
# prelude: syscalls
FLAGS = {"CLONE_NEWUSER": 0x10000000, "CLONE_NEWNS": 0x00020000, "CLONE_NEWNET": 0x40000000,
         "CLONE_NEWPID": 0x20000000, "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUTS": 0x04000000,
         "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWTIME": 0x00000080,
         "CLONE_NEWUSER|CLONE_NEWNS": 0x10020000}
SYS_unshare = 272
for name, flag in FLAGS.items():
    # In-process as specified (EPERM); a success is reported and ends the test at once.
    expect(f"unshare({name})", (errno.EPERM,), lambda flag=flag: syscall(SYS_unshare, flag))
    if escaped:
        break
report()
