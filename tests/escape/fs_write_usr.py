# escape: write into /usr, the Python installation and the installed packages (poison the next run's imports)
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
import sysconfig

import numpy

targets = {"/usr", "/usr/bin", "/usr/lib", "/usr/local/bin", "/usr/local/lib",
           os.path.dirname(json.__file__),                       # the standard library
           os.path.dirname(numpy.__file__),                      # a warmed package
           os.path.join(os.path.dirname(json.__file__), "__pycache__"),
           sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
           os.path.dirname(os.path.realpath(sys.executable)) if sys.executable else "/usr/bin"}
for d in sorted(targets):
    if os.path.isdir(d):
        probe_dir(d)
for f in (json.__file__, numpy.__file__, os.path.realpath("/usr/bin/python3"), "/usr/bin/env",
          os.path.realpath(sys.executable) if sys.executable else "/usr/bin/env"):
    if os.path.isfile(f):
        probe_file(f)
report()
