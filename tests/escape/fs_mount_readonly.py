# escape: change a host folder mounted read-only (MCP_EXEC_MOUNTS): write, create, truncate, chmod, utime, xattr, rename, remove, link
# expect: pass
# prelude: mount
# The suite's data/ is read-only in runs (tests/integration/postures.h): every
# change, metadata included, is refused (EROFS from the read-only mount; where
# there is no mount namespace the container's -v ...:ro does the same and
# Landlock refuses the rest).
import os

CSV = DATA + "/rain.csv"
st = os.stat(CSV)

attempt("create a file", lambda: os.close(os.open(DATA + "/new.txt", os.O_WRONLY | os.O_CREAT, 0o644)))
attempt("open for writing", lambda: os.close(os.open(CSV, os.O_WRONLY)))
attempt("open for append", lambda: os.close(os.open(CSV, os.O_WRONLY | os.O_APPEND)))
attempt("truncate", lambda: os.truncate(CSV, st.st_size))
attempt("chmod (same mode)", lambda: os.chmod(CSV, st.st_mode & 0o7777))
attempt("utime (same times)", lambda: os.utime(CSV, ns=(st.st_atime_ns, st.st_mtime_ns)))
attempt("setxattr", lambda: os.setxattr(CSV, "user.mcp", b"x"))
attempt("rename", lambda: os.rename(CSV, DATA + "/moved.csv"))
attempt("unlink", lambda: os.unlink(DATA + "/sub/note.txt"))
attempt("mkdir", lambda: os.mkdir(DATA + "/newdir"))
attempt("rmdir", lambda: os.rmdir(DATA + "/sub"))
attempt("symlink", lambda: os.symlink("/etc/passwd", DATA + "/newlink"))
attempt("hard link inside", lambda: os.link(CSV, DATA + "/hard.csv"))
attempt("hard link into the working directory", lambda: os.link(CSV, "hard.csv"))
verdict("the read-only mount changed")
with open(CSV) as f:
    assert f.readline() == "city,year,rain_mm\n"
print("PASS")
