# escape: TIOCSTI: push characters into a terminal's input (stdin and a fresh pty)
# expect: pass
# prelude: syscalls
import fcntl
import termios

# fd 0 is a pipe here, so without the filter this would be ENOTTY: only EPERM shows the
# ioctl itself is refused. The pty (if /dev/pts is usable) is a real terminal.
expect("ioctl(0, TIOCSTI)", (errno.EPERM,), lambda: fcntl.ioctl(0, termios.TIOCSTI, b"x"))
try:
    master, slave = os.openpty()
except OSError as e:
    print(f"NOTE: no pty ({e.strerror})")
else:
    expect("ioctl(pty, TIOCSTI)", (errno.EPERM,), lambda: fcntl.ioctl(slave, termios.TIOCSTI, b"x"))
    os.close(master)
    os.close(slave)
report()
