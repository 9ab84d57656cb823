# escape: run without no_new_privs or without a seccomp filter (in the runner and in its children)
# expect: pass
import os
import subprocess
import sys


def fields(text):
    return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)


def check(who, text, bad):
    f = fields(text)
    if f.get("NoNewPrivs", "").strip() != "1":
        bad.append(f"{who}: NoNewPrivs {f.get('NoNewPrivs', '?').strip()}")
    # 2 = SECCOMP_MODE_FILTER
    if f.get("Seccomp", "").strip() != "2":
        bad.append(f"{who}: Seccomp {f.get('Seccomp', '?').strip()}")
    if int(f.get("Seccomp_filters", "1").strip() or 0) < 1:
        bad.append(f"{who}: Seccomp_filters {f.get('Seccomp_filters').strip()}")


bad = []
with open("/proc/self/status") as f:
    check("runner", f.read(), bad)
check("exec'd child", subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True,
                                       check=True).stdout, bad)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    with open("/proc/self/status", "rb") as f:
        os.write(w, f.read())
    os._exit(0)
os.close(w)
data = b""
while chunk := os.read(r, 65536):
    data += chunk
os.waitpid(pid, 0)
check("forked child", data.decode(), bad)
if bad:
    print("ESCAPED:", "; ".join(bad))
    sys.exit(1)
print("PASS")
