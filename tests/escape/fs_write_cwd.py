# escape: (workload) the working directory is private and fully writable; HOME and TMPDIR point to it
# expect: pass
import os
import shutil
import stat
import sys

cwd = os.path.realpath(os.getcwd())
for key in ("HOME", "TMPDIR"):
    assert os.path.realpath(os.environ[key]) == cwd, (key, os.environ[key], cwd)
assert os.path.realpath(os.path.expanduser("~")) == cwd
assert os.access(cwd, os.W_OK)

with open("a.txt", "w") as f:
    f.write("hello\n" * 1000)
with open("a.txt", "a") as f:
    f.write("more\n")
assert open("a.txt").read().endswith("hello\nmore\n")
os.makedirs("d1/d2/d3")
shutil.copy("a.txt", "d1/d2/d3/b.txt")
os.rename("d1/d2/d3/b.txt", "d1/c.txt")
os.symlink("a.txt", "link.txt")
assert open("link.txt").read(5) == "hello"
os.link("a.txt", "hard.txt")
assert os.stat("hard.txt").st_nlink == 2
os.chmod("a.txt", 0o600)
assert stat.S_IMODE(os.stat("a.txt").st_mode) == 0o600
os.utime("a.txt", (1, 1))
os.truncate("a.txt", 10)
assert os.path.getsize("a.txt") == 10
os.mkfifo("fifo")
with open("big.bin", "wb") as f:
    f.write(os.urandom(1 << 20) * 10)  # 10 MiB: well under the file-size limit
assert os.path.getsize("big.bin") == 10 << 20
shutil.copytree("d1", "d1_copy")
assert sorted(os.listdir("d1_copy")) == ["c.txt", "d2"]
shutil.rmtree("d1")
for p in ("big.bin", "hard.txt", "link.txt", "fifo"):
    os.unlink(p)
# A module written into the working directory is importable (sys.path[0] is the script dir).
with open("mymod.py", "w") as f:
    f.write("VALUE = 42\n")
import mymod  # noqa: E402

assert mymod.VALUE == 42
print("PASS")
