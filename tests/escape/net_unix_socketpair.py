# escape: (workload) AF_UNIX socketpairs must WORK: multiprocessing and asyncio rely on them
# expect: pass
import os
import socket
import sys

for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
    a, b = socket.socketpair(socket.AF_UNIX, kind)
    with a, b:
        a.sendall(b"ping")
        assert b.recv(16) == b"ping", kind
        b.sendall(b"pong")
        assert a.recv(16) == b"pong", kind

# Across a fork, with a file descriptor passed over the socket (SCM_RIGHTS).
a, b = socket.socketpair()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    a.close()
    msg, fds, _, _ = socket.recv_fds(b, 16, 1)
    os.write(fds[0], msg.upper())
    os._exit(0)
b.close()
socket.send_fds(a, [b"hello"], [w])
os.close(w)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
assert os.read(r, 16) == b"HELLO"

# A pathname socket inside the working directory (the only writable place).
path = os.path.join(os.getcwd(), "s.sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(1)
cli = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
cli.connect(path)
conn, _ = srv.accept()
cli.sendall(b"x")
assert conn.recv(1) == b"x"
for s in (conn, cli, srv):
    s.close()
os.unlink(path)
print("PASS")
