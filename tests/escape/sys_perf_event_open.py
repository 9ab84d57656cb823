# escape: perf_event_open: profile ourselves, or the whole CPU
# expect: pass
# prelude: syscalls
SYS_perf_event_open = 298
attr = (ctypes.c_uint8 * 128)()
ctypes.c_uint32.from_buffer(attr, 0).value = 1     # type: PERF_TYPE_SOFTWARE
ctypes.c_uint32.from_buffer(attr, 4).value = 128   # size
ctypes.c_uint64.from_buffer(attr, 8).value = 0     # config: PERF_COUNT_SW_CPU_CLOCK
ALLOWED = (errno.EPERM, errno.EACCES)
expect("perf_event_open(self, any cpu)", ALLOWED, lambda: syscall(SYS_perf_event_open, attr, 0, -1, -1, 0))
expect("perf_event_open(all processes, cpu 0)", ALLOWED, lambda: syscall(SYS_perf_event_open, attr, -1, 0, -1, 0))
report()
