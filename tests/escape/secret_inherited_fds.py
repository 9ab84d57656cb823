# escape: use descriptors inherited from the zygote or the server (control socket, listening socket, cache dirs)
# expect: pass
import errno
import os
import socket
import stat
import sys

# A run starts with stdin/stdout/stderr and, at most, pipes it needs to report back. Any
# inherited socket, directory or file outside the working directory is a way out. A
# Python session's interpreter also holds the socket its next cells arrive on: allowed
# only if nothing can be sent through it (receive-only), so it carries nothing out.
# Every run also holds its code-mode tool channel at fd 997: without upstreams the
# supervisor closed its end before the run began, so a send meets EPIPE too; with
# upstreams (the root and container postures of the host harness) it is the run's own
# unix stream socket to the supervisor, which the chan_* snippets attack.
TOOLS_FD = 997


def tool_channel(fd):
    if fd != TOOLS_FD:
        return False
    s = socket.socket(fileno=os.dup(fd))
    try:
        return s.family == socket.AF_UNIX and s.type == socket.SOCK_STREAM
    finally:
        s.close()


def receive_only(fd):
    s = socket.socket(fileno=os.dup(fd))
    try:
        s.send(b"x", socket.MSG_DONTWAIT)
    except OSError as e:
        return e.errno == errno.EPIPE
    finally:
        s.close()
    return False

cwd = os.path.realpath(os.getcwd())
listing = os.listdir("/proc/self/fd")  # the listing's own fd shows up and is gone after
bad, notes = [], []
for name in listing:
    fd = int(name)
    try:
        st = os.fstat(fd)
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue  # the listing fd, already closed
    if fd <= 2:
        continue
    mode = st.st_mode
    if stat.S_ISSOCK(mode) and receive_only(fd):
        notes.append(f"fd {fd}: {target} (receive-only socket)")
    elif stat.S_ISSOCK(mode) and tool_channel(fd):
        notes.append(f"fd {fd}: {target} (the run's tool channel)")
    elif stat.S_ISSOCK(mode):
        bad.append(f"fd {fd}: socket {target}")
    elif stat.S_ISDIR(mode):
        bad.append(f"fd {fd}: directory {target}")
    elif stat.S_ISREG(mode) and not target.startswith(cwd + "/"):
        bad.append(f"fd {fd}: file {target}")
    elif stat.S_ISFIFO(mode):
        notes.append(f"fd {fd}: {target} (pipe, flags {os.get_inheritable(fd) and 'inheritable' or 'cloexec'})")
    else:
        notes.append(f"fd {fd}: {target}")
for n in notes:
    print("NOTE:", n)
if bad:
    print("ESCAPED:", "; ".join(bad))
    sys.exit(1)
print("PASS")
