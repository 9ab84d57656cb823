# escape: use a host folder mounted read-write (MCP_EXEC_MOUNTS) for devices, setuid files, fifos, sockets, symlinks, executables and hard links in or out
# expect: pass
# prelude: mount
# The suite's results/ is read-write in runs (tests/integration/postures.h):
# files and folders may be made there, nothing else: no device (seccomp,
# nodev), no setuid or setgid bit (seccomp), no fifo, socket or symlink
# (Landlock), no execution (noexec, Landlock), no hard link across it.
import os
import shutil
import socket
import stat
import subprocess

mine = f"{RESULTS}/tricks-{os.urandom(6).hex()}"  # pids repeat across pid namespaces
os.mkdir(mine)

with open(f"{mine}/plain.txt", "w") as f:
    f.write("written by a run\n")
attempt("char device", lambda: os.mknod(f"{mine}/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3)))
attempt("block device", lambda: os.mknod(f"{mine}/sda", 0o666 | stat.S_IFBLK, os.makedev(8, 0)))
attempt("fifo", lambda: os.mkfifo(f"{mine}/fifo"))
attempt("symlink", lambda: os.symlink("/etc/passwd", f"{mine}/link"))


def bind_socket():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(f"{mine}/sock")


attempt("unix socket", bind_socket)
attempt("chmod setuid", lambda: os.chmod(f"{mine}/plain.txt", 0o4755))
attempt("chmod setgid", lambda: os.chmod(f"{mine}/plain.txt", 0o2755))
attempt("create setuid", lambda: os.close(os.open(f"{mine}/suid", os.O_WRONLY | os.O_CREAT, 0o4755)))
attempt("hard link of /etc/passwd in", lambda: os.link("/etc/passwd", f"{mine}/passwd"))
attempt("hard link of the read-only mount in", lambda: os.link(f"{DATA}/rain.csv", f"{mine}/rain.csv"))
attempt("hard link out to the working directory", lambda: os.link(f"{mine}/plain.txt", "plain.txt"))
shutil.copyfile("/bin/true", f"{mine}/true")
os.chmod(f"{mine}/true", 0o755)
attempt("execute a file of the mount", lambda: subprocess.run([f"{mine}/true"], check=True))
with open(f"{mine}/plain.txt") as f:
    assert f.read() == "written by a run\n"
if os.stat(f"{mine}/plain.txt").st_mode & (stat.S_ISUID | stat.S_ISGID):
    escaped.append("a setuid or setgid bit was kept")
shutil.rmtree(mine)
verdict("the read-write mount allowed")
print("PASS")
