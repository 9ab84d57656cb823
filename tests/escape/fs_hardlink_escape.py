# escape: hard-link files from outside the working directory into it (then write through the link)
# expect: pass
import errno
import os
import sys

# Landlock answers EACCES, a read-only mount EROFS, plain permissions EACCES/EPERM;
# ETXTBSY: the file is a running executable.
DENIED = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ETXTBSY)
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


import json
import glob

# EXDEV: different mount, or Landlock refusing to move a file into a hierarchy with
# different rights; EPERM: fs.protected_hardlinks; EACCES/EROFS: Landlock/read-only.
DENIED = DENIED + (errno.EXDEV,)
sources = ["/etc/passwd", "/etc/hosts", "/etc/hostname", json.__file__, "/usr/bin/env"]
# Files the server's uid may own (its cache): protected_hardlinks would not stop these.
mpl = os.environ.get("MPLCONFIGDIR")
if mpl:
    sources += glob.glob(os.path.join(glob.escape(os.path.dirname(mpl)), "**", "*"), recursive=True)[:20]
for i, src in enumerate(sources):
    if not os.path.isfile(src) or os.path.islink(src):
        continue
    dst = f"hl_{i}"
    attempt(f"hard link {src} into the working directory", lambda: os.link(src, dst), lambda: os.unlink(dst))
    attempt(f"move {src} into the working directory", lambda: os.rename(src, dst + ".mv"),
            lambda: os.rename(dst + ".mv", src))
report()
