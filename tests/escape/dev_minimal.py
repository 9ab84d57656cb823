# escape: take host-wide shared devices: ptys (300 x /dev/ptmx), disks, /dev/mem, the console
# expect: pass
import errno
import os

escaped = []
for path in ("/dev/ptmx", "/dev/pts/ptmx", "/dev/tty", "/dev/console", "/dev/mem", "/dev/kmsg",
             "/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/loop0", "/dev/fuse", "/dev/net/tun",
             "/dev/kvm", "/dev/vsock", "/dev/tty0"):
    for flags in (os.O_RDONLY | os.O_NOCTTY, os.O_RDWR | os.O_NOCTTY):
        try:
            fd = os.open(path, flags)
        except OSError as e:
            if e.errno not in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.ENXIO, errno.ENODEV,
                               errno.EROFS, errno.EIO):
                print(f"UNEXPECTED: open({path}): {errno.errorcode.get(e.errno, e.errno)}")
                raise SystemExit(1)
            continue
        os.close(fd)
        escaped.append(path)
        break
if escaped:
    print("ESCAPED: opened", escaped)
    raise SystemExit(1)
# What a run needs still works.
with open("/dev/null", "wb") as f:
    f.write(b"x")
assert open("/dev/zero", "rb").read(4) == b"\0" * 4
assert len(open("/dev/urandom", "rb").read(16)) == 16
assert len(open("/dev/random", "rb").read(16)) == 16
try:
    with open("/dev/full", "wb") as f:
        f.write(b"x")
        f.flush()
except OSError as e:
    assert e.errno == errno.ENOSPC
try:
    names = sorted(os.listdir("/dev"))
    extra = set(names) - {"null", "zero", "full", "random", "urandom", "shm", "fd", "stdin",
                          "stdout", "stderr"}
    if extra:
        print("ESCAPED: /dev holds", sorted(extra))
        raise SystemExit(1)
except PermissionError:
    print("NOTE: /dev cannot be listed (Landlock; no private /dev in this posture)")
print("PASS")
