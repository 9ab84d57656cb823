# escape: a write past the disk limit, left uncaught, ends the run with reason file_size
# expect: reason file_size
# RLIMIT_FSIZE (the disk limit, ~256 MiB) refuses a byte written at 512 MiB;
# the file is sparse, so no disk fills first (a container's small /tmp would
# say ENOSPC). CPython ignores SIGXFSZ, so the write raises OSError EFBIG,
# which is not caught here. The result must name the limit that was hit
# (reason file_size), as an uncaught MemoryError gives reason memory.
with open("fill.bin", "wb") as f:
    f.seek(512 << 20)
    f.write(b"x")
    f.flush()
print("ESCAPED: wrote a byte at 512 MiB past the disk limit")
