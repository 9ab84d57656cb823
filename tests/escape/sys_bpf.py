# escape: bpf(): create a map, load a program
# expect: pass
# prelude: syscalls
SYS_bpf, BPF_MAP_CREATE, BPF_PROG_LOAD = 321, 0, 5
attr = (ctypes.c_uint32 * 32)()
attr[0], attr[1], attr[2], attr[3] = 2, 4, 4, 1  # BPF_MAP_TYPE_ARRAY, key 4, value 4, 1 entry
expect("bpf(BPF_MAP_CREATE)", (errno.EPERM,), lambda: syscall(SYS_bpf, BPF_MAP_CREATE, attr, ctypes.sizeof(attr)))
# A two-instruction socket filter: r0 = 0; exit.
insns = (ctypes.c_uint64 * 2)(0x00000000000000B7, 0x0000000000000095)
license = ctypes.create_string_buffer(b"GPL")
prog = (ctypes.c_uint64 * 16)()
prog[0] = 1 | (2 << 32)  # prog_type BPF_PROG_TYPE_SOCKET_FILTER, insn_cnt 2
prog[1] = ctypes.addressof(insns)
prog[2] = ctypes.addressof(license)
expect("bpf(BPF_PROG_LOAD)", (errno.EPERM,), lambda: syscall(SYS_bpf, BPF_PROG_LOAD, prog, ctypes.sizeof(prog)))
report()
