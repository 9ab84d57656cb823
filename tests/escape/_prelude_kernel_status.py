"""Shared by the snippets whose header says `# prelude: kernel_status`: CHILD is
a program an exec'd child runs to ask the kernel itself for its capabilities,
no_new_privs and seccomp mode (capget, prctl). A child cannot always read
/proc/self: where runs have no pid namespace of their own, Landlock lets a
run read only the runner's own /proc entries."""
CHILD = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
h = Header(0x20080522, 0)
d = (Data * 2)()
libc.capget(ctypes.byref(h), d)
print("CapEff", hex(d[0].effective | d[1].effective << 32))
print("CapPrm", hex(d[0].permitted | d[1].permitted << 32))
print("CapInh", hex(d[0].inheritable | d[1].inheritable << 32))
print("NoNewPrivs", libc.prctl(39, 0, 0, 0, 0))
print("Seccomp", libc.prctl(21, 0, 0, 0, 0))
"""
