"""Shared by the snippets whose header says `# prelude: syscalls`: the harness
puts this file in front of them, so that each still reaches the sandbox as one
self-contained program. Raw x86_64 system calls and the expect/report helpers."""
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
