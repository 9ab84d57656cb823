# escape: mount a filesystem, bind / into the workdir, unmount the sandbox's mounts (mount/umount2, new mount API)
# expect: pass
import ctypes
import errno
import os
import signal
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
escaped, unexpected = [], []


def syscall(nr, *args):
    """Raw x86_64 syscall; raises OSError on failure like the os module does."""
    r = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) if isinstance(a, int) else a for a in args))
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def names(errnos):
    return "/".join(errno.errorcode[e] for e in errnos)


def expect(what, allowed, fn):
    """fn() must fail with an errno in allowed (what the seccomp filter promises)."""
    try:
        r = fn()
    except OSError as e:
        if e.errno not in allowed:
            unexpected.append(f"{what}: {errno.errorcode.get(e.errno, e.errno)}, expected {names(allowed)}")
        return
    escaped.append(f"{what} returned {r}")


def expect_in_child(what, allowed, fn):
    """Like expect(), in a forked child: for calls the brief does not pin down, where the
    filter may also answer by killing (SIGSYS), and so a success changes nothing here."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            msg = f"ok {fn()}"
        except OSError as e:
            msg = f"errno {e.errno}"
        except BaseException as e:
            msg = f"error {e!r}"
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    msg = os.read(r, 4096).decode()
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        if os.WTERMSIG(status) != signal.SIGSYS:
            unexpected.append(f"{what}: child killed by signal {os.WTERMSIG(status)}")
        return
    kind, _, value = msg.partition(" ")
    if kind == "errno":
        if int(value) not in allowed:
            unexpected.append(f"{what}: {errno.errorcode.get(int(value), value)}, expected {names(allowed)} or SIGSYS")
    elif kind == "ok":
        escaped.append(f"{what} returned {value}")
    else:
        unexpected.append(f"{what}: {msg}")


def report():
    if escaped:
        print("ESCAPED:", "; ".join(escaped))
        sys.exit(1)
    if unexpected:
        print("UNEXPECTED:", "; ".join(unexpected))
        sys.exit(1)
    print("PASS")


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
