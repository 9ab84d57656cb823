# escape: personality(): switch to a 32-bit or no-ASLR/READ_IMPLIES_EXEC persona
# expect: pass
# prelude: syscalls
SYS_personality = 135
PER_LINUX32, ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC = 0x0008, 0x0040000, 0x0400000
before = syscall(SYS_personality, 0xFFFFFFFF)  # a query must keep working
for name, persona in (("PER_LINUX32", PER_LINUX32), ("ADDR_NO_RANDOMIZE", ADDR_NO_RANDOMIZE),
                      ("READ_IMPLIES_EXEC", READ_IMPLIES_EXEC)):
    expect(f"personality({name})", (errno.EPERM,), lambda p=persona: syscall(SYS_personality, p))
after = syscall(SYS_personality, 0xFFFFFFFF)
if after != before:
    escaped.append(f"persona changed from {before:#x} to {after:#x}")
report()
