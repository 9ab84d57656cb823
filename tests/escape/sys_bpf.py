# escape: bpf(): create a map, load a program
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


SYS_bpf, BPF_MAP_CREATE, BPF_PROG_LOAD = 321, 0, 5
attr = (ctypes.c_uint32 * 32)()
attr[0], attr[1], attr[2], attr[3] = 2, 4, 4, 1  # BPF_MAP_TYPE_ARRAY, key 4, value 4, 1 entry
expect("bpf(BPF_MAP_CREATE)", (errno.EPERM,), lambda: syscall(SYS_bpf, BPF_MAP_CREATE, attr, ctypes.sizeof(attr)))
# A two-instruction socket filter: r0 = 0; exit.
insns = (ctypes.c_uint64 * 2)(0x00000000000000B7, 0x0000000000000095)
license = ctypes.create_string_buffer(b"GPL")
prog = (ctypes.c_uint64 * 16)()
prog[0] = 1 | (2 << 32)  # prog_type BPF_PROG_TYPE_SOCKET_FILTER, insn_cnt 2
prog[1] = ctypes.addressof(insns)
prog[2] = ctypes.addressof(license)
expect("bpf(BPF_PROG_LOAD)", (errno.EPERM,), lambda: syscall(SYS_bpf, BPF_PROG_LOAD, prog, ctypes.sizeof(prog)))
report()
