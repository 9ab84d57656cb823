# escape: fill the disk: write 512 MiB into the working directory in 1 MiB chunks
# expect: pass
# timeout: 60
# The ~256 MiB file-size limit (EFBIG) or a full/quota-limited workdir (ENOSPC, EDQUOT)
# must stop the writes before the end. Note: RLIMIT_FSIZE also raises SIGXFSZ, which
# CPython normally ignores; if the runtime does not, the run dies by SIGXFSZ here.
import errno
import os
import sys

CHUNK = b"\0" * (1 << 20)
TOTAL = 512 << 20
fd = os.open("fill.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
written, error = 0, None
try:
    while written < TOTAL:
        written += os.write(fd, CHUNK)  # a partial write just before the limit, then the error
except OSError as e:
    error = e
finally:
    os.close(fd)
    os.unlink("fill.bin")
print(f"wrote {written >> 20} MiB, then {error!r}")
if error is None:
    print(f"ESCAPED: wrote {written >> 20} MiB without hitting a limit")
    sys.exit(1)
if error.errno not in (errno.EFBIG, errno.ENOSPC, errno.EDQUOT):
    print(f"UNEXPECTED: write failed with {errno.errorcode.get(error.errno, error.errno)}")
    sys.exit(1)
# Space is given back: ordinary writes work again.
with open("after.txt", "w") as f:
    f.write("ok")
print("PASS")
