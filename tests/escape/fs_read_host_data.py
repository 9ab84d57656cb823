# escape: read the host's data: home folders, /opt, /var/lib, /srv, the server's files, machine-id, the kernel command line
# expect: pass
import errno
import glob
import os

found = []
for path in ("/etc/machine-id", "/var/lib/dbus/machine-id", "/proc/cmdline", "/proc/1/cmdline"):
    try:
        with open(path, "rb") as f:
            data = f.read(200)
    except OSError as e:
        continue
    if data and not (path == "/proc/1/cmdline" and os.getpid() == 2 and os.getppid() == 1):
        found.append(f"{path}: {data[:60]!r}")
for d in ("/home", "/root", "/opt", "/srv", "/var/lib", "/var/log", "/mnt", "/media", "/work",
          "/usr/local/src", "/boot"):
    try:
        names = os.listdir(d)
    except OSError:
        continue
    if names:
        found.append(f"{d}: lists {names[:5]}")
# A file of a checkout anywhere (the CMakeLists.txt of a project, say); the
# system's own /usr is the runtime's and may be read.
for pattern in ("/*/*/CMakeLists.txt", "/*/*/*/CMakeLists.txt", "/tmp/*/CMakeLists.txt"):
    for path in [p for p in glob.glob(pattern) if not p.startswith("/usr/")][:5]:
        try:
            with open(path, "rb") as f:
                found.append(f"{path}: {f.read(40)!r}")
        except OSError:
            pass
if found:
    print("ESCAPED: host data is readable:", found[:10])
    raise SystemExit(1)
# What a run needs is still there.
import numpy, pandas, matplotlib, PIL, ssl, sqlite3, zoneinfo  # noqa: E401
assert zoneinfo.ZoneInfo("Europe/Paris")
assert ssl.create_default_context().cert_store_stats()["x509_ca"] > 0
print("PASS")
