# escape: kernel keyrings (keyctl/add_key/request_key): read the session/user keyrings, persist a key across runs
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


SYS_add_key, SYS_request_key, SYS_keyctl = 248, 249, 250
KEYCTL_GET_KEYRING_ID, KEYCTL_READ = 0, 11
KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING = -2, -3, -4
ALLOWED = (errno.EPERM, errno.ENOSYS)
expect("keyctl(GET_KEYRING_ID, session)", ALLOWED,
       lambda: syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0))
expect("keyctl(GET_KEYRING_ID, user, create)", ALLOWED,
       lambda: syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 1))
buf = ctypes.create_string_buffer(256)
expect("keyctl(READ, user keyring)", ALLOWED,
       lambda: syscall(SYS_keyctl, KEYCTL_READ, KEY_SPEC_USER_KEYRING, buf, 256))
# The user keyring outlives the run: a key added here would be readable by the next run.
expect("add_key(user, mcp_escape)", ALLOWED,
       lambda: syscall(SYS_add_key, b"user", b"mcp_escape", b"x", 1, KEY_SPEC_USER_KEYRING))
expect_in_child("request_key(user, mcp_escape)", ALLOWED + (errno.ENOKEY,),
                lambda: syscall(SYS_request_key, b"user", b"mcp_escape", None, 0))
report()
