# escape: (workload) subprocess: echo, a shell pipeline, sleep, stdin piping, exit codes
# expect: pass
import subprocess
import sys

assert subprocess.run(["echo", "hi"], capture_output=True, text=True, check=True).stdout == "hi\n"
assert subprocess.run("echo a | tr a b", shell=True, capture_output=True, text=True, check=True).stdout == "b\n"
assert subprocess.run(["sleep", "0.1"]).returncode == 0
assert subprocess.run(["cat"], input=b"through stdin", capture_output=True).stdout == b"through stdin"
assert subprocess.run(["sh", "-c", "exit 3"]).returncode == 3
out = subprocess.check_output(["ls", "-la", "."], text=True)
assert "." in out
p = subprocess.Popen(["sh", "-c", "read x; echo got $x"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
assert p.communicate("line\n")[0] == "got line\n"
# /dev/null must stay writable (DEVNULL, shell redirections).
assert subprocess.run(["sh", "-c", "echo x > /dev/null; echo y 2>/dev/null"], stdout=subprocess.DEVNULL).returncode == 0
with open("/dev/null", "w") as f:
    f.write("discarded")
print("PASS")
