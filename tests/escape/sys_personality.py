# escape: personality(): switch to a 32-bit or no-ASLR/READ_IMPLIES_EXEC persona
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


SYS_personality = 135
PER_LINUX32, ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC = 0x0008, 0x0040000, 0x0400000
before = syscall(SYS_personality, 0xFFFFFFFF)  # a query must keep working
for name, persona in (("PER_LINUX32", PER_LINUX32), ("ADDR_NO_RANDOMIZE", ADDR_NO_RANDOMIZE),
                      ("READ_IMPLIES_EXEC", READ_IMPLIES_EXEC)):
    expect(f"personality({name})", (errno.EPERM,), lambda p=persona: syscall(SYS_personality, p))
after = syscall(SYS_personality, 0xFFFFFFFF)
if after != before:
    escaped.append(f"persona changed from {before:#x} to {after:#x}")
report()
