# escape: mount a filesystem, bind / into the workdir, unmount the sandbox's mounts (mount/umount2, new mount API)
# expect: pass
# prelude: syscalls
EPERM, ENOSYS = (errno.EPERM,), (errno.EPERM, errno.ENOSYS)
SYS_mount, SYS_umount2 = 165, 166
MS_BIND, MS_REC, MS_REMOUNT, MNT_DETACH = 4096, 16384, 32, 2
cwd = os.getcwd().encode()
expect("mount tmpfs on the workdir", EPERM, lambda: syscall(SYS_mount, b"none", cwd, b"tmpfs", 0, None))
expect("bind-mount / onto the workdir", EPERM, lambda: syscall(SYS_mount, b"/", cwd, None, MS_BIND | MS_REC, None))
expect("remount the workdir", EPERM, lambda: syscall(SYS_mount, None, cwd, None, MS_REMOUNT | MS_BIND, None))
expect("mount proc", EPERM, lambda: syscall(SYS_mount, b"proc", cwd, b"proc", 0, None))
expect("umount2 the workdir", EPERM, lambda: syscall(SYS_umount2, cwd, MNT_DETACH))
expect("umount2 /tmp", EPERM, lambda: syscall(SYS_umount2, b"/tmp", MNT_DETACH))
# The new mount API (open_tree, move_mount, fsopen, fsmount, mount_setattr): EPERM or ENOSYS.
AT_FDCWD, OPEN_TREE_CLONE = -100, 1
expect_in_child("open_tree(/, OPEN_TREE_CLONE)", ENOSYS, lambda: syscall(428, AT_FDCWD, b"/", OPEN_TREE_CLONE))
expect_in_child("fsopen(tmpfs)", ENOSYS, lambda: syscall(430, b"tmpfs", 0))
expect_in_child("move_mount", ENOSYS, lambda: syscall(429, -1, b"", AT_FDCWD, cwd, 0))
expect_in_child("mount_setattr", ENOSYS, lambda: syscall(442, AT_FDCWD, cwd, 0, None, 0))
report()
