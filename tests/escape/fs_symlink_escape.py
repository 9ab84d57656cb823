# escape: write outside the working directory through symlinks created inside it
# expect: pass
import errno
import os
import sys

# Landlock answers EACCES, a read-only mount EROFS, plain permissions EACCES/EPERM;
# ETXTBSY: the file is a running executable.
# EXDEV: rename(2) refuses to move a file onto another filesystem, so it
# cannot land in /etc either.
DENIED = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ETXTBSY, errno.EXDEV)
escaped, unexpected = [], []


def attempt(what, action, undo=None):
    try:
        action()
    except OSError as e:
        if e.errno not in DENIED:
            unexpected.append(f"{what}: {errno.errorcode.get(e.errno, e.errno)}")
        return
    escaped.append(what)
    if undo:
        try:
            undo()
        except OSError:
            pass


def probe_dir(d):
    p = os.path.join(d, f"mcp_escape_probe_{os.getpid()}")
    attempt(f"create a file in {d}", lambda: os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)),
            lambda: os.unlink(p))
    attempt(f"mkdir in {d}", lambda: os.mkdir(p + ".d"), lambda: os.rmdir(p + ".d"))
    attempt(f"symlink in {d}", lambda: os.symlink("/", p + ".l"), lambda: os.unlink(p + ".l"))
    attempt(f"mkfifo in {d}", lambda: os.mkfifo(p + ".p"), lambda: os.unlink(p + ".p"))


def probe_file(f):
    # Opening for writing is the attack: nothing is ever written, nothing truncated.
    attempt(f"open {f} for writing", lambda: os.close(os.open(f, os.O_WRONLY | os.O_APPEND)))
    attempt(f"truncate {f} to its own size", lambda: os.truncate(f, os.stat(f).st_size))


def report():
    if escaped:
        print("ESCAPED:", "; ".join(escaped))
        sys.exit(1)
    if unexpected:
        print("UNEXPECTED:", "; ".join(unexpected))
        sys.exit(1)
    print("PASS")


cwd = os.getcwd()
# Creating symlinks in the working directory is allowed; following them out is not.
os.symlink("/etc/passwd", "passwd_link")
os.symlink("/etc", "etc_link")
os.symlink("..", "up_link")
os.symlink(os.path.dirname(cwd), "parent_link")

probe_file("passwd_link")
attempt("create a file through a symlink to /etc",
        lambda: os.close(os.open("etc_link/mcp_escape_probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)),
        lambda: os.unlink("/etc/mcp_escape_probe"))
for link in ("up_link", "parent_link"):
    attempt(f"create a file through {link}",
            lambda link=link: os.close(os.open(f"{link}/mcp_escape_probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)),
            lambda link=link: os.unlink(f"{link}/mcp_escape_probe"))
# Moving a file of ours out through a symlinked directory.
with open("mine.txt", "w") as f:
    f.write("x")
attempt("rename a file into /etc through a symlink", lambda: os.rename("mine.txt", "etc_link/mcp_escape_moved"),
        lambda: os.rename("etc_link/mcp_escape_moved", "mine.txt"))
# A symlink swapped in place of a file just before opening it (the classic TOCTOU).
if os.path.exists("mine.txt"):
    os.unlink("mine.txt")
os.symlink("/etc/hosts", "mine.txt")
attempt("append through a swapped-in symlink", lambda: open("mine.txt", "a").close())
report()
