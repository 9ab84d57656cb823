# escape: (workload) tempfile: TemporaryDirectory, NamedTemporaryFile, mkstemp, all under $TMPDIR (= the workdir)
# expect: pass
import os
import tempfile

cwd = os.path.realpath(os.getcwd())
assert os.path.realpath(tempfile.gettempdir()) == cwd, tempfile.gettempdir()
with tempfile.TemporaryDirectory() as d:
    assert os.path.realpath(d).startswith(cwd + "/")
    with open(os.path.join(d, "f"), "w") as f:
        f.write("x")
assert not os.path.exists(d)
with tempfile.NamedTemporaryFile("w+", suffix=".txt") as f:
    f.write("named")
    f.flush()
    assert open(f.name).read() == "named"
fd, path = tempfile.mkstemp()
os.write(fd, b"y")
os.close(fd)
os.unlink(path)
with tempfile.SpooledTemporaryFile(max_size=10) as f:
    f.write(b"z" * 100)  # rolls over to a real file
print("PASS")
