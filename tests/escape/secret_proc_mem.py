# escape: open /proc/<pid>/mem (and maps) of the zygote (our parent) and of pid 1
# expect: pass
import errno
import os
import sys

# mem/maps need PTRACE_MODE_ATTACH/READ: another uid, a non-dumpable zygote or Landlock's
# ptrace scoping answer EACCES (EPERM from some LSMs); ESRCH/ENOENT: gone or hidden.
DENIED = (errno.EACCES, errno.EPERM, errno.ESRCH, errno.ENOENT)
me = os.getpid()
escaped, unexpected = [], []
for pid in sorted({1, os.getppid()} - {0, me}):
    for leaf, flags in (("mem", os.O_RDONLY), ("mem", os.O_RDWR), ("maps", os.O_RDONLY),
                        ("pagemap", os.O_RDONLY), ("stack", os.O_RDONLY), ("syscall", os.O_RDONLY)):
        path = f"/proc/{pid}/{leaf}"
        try:
            fd = os.open(path, flags)
        except OSError as e:
            if e.errno not in DENIED:
                unexpected.append(f"{path}: {errno.errorcode.get(e.errno, e.errno)}")
            continue
        try:
            data = os.read(fd, 64)  # maps: the check may happen at read time
            escaped.append(f"opened and read {path} ({'rw' if flags == os.O_RDWR else 'r'}, {len(data)} bytes)")
        except OSError as e:
            if e.errno not in DENIED + (errno.EIO,):  # mem at offset 0 reads EIO even when allowed
                unexpected.append(f"read {path}: {errno.errorcode.get(e.errno, e.errno)}")
            elif leaf == "mem":
                escaped.append(f"opened {path}")
        finally:
            os.close(fd)
# Our own memory stays ours: this must work.
with open("/proc/self/maps") as f:
    assert f.readline()
if escaped:
    print("ESCAPED:", "; ".join(escaped))
    sys.exit(1)
if unexpected:
    print("UNEXPECTED:", "; ".join(unexpected))
    sys.exit(1)
print("PASS")
