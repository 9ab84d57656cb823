# escape: grow memory in 64 MiB steps (all pages written) without catching MemoryError
# expect: reason memory
# timeout: 30
# Whether the run ends by an uncaught MemoryError (exit 1) or is killed by the kernel,
# the result must say reason == "memory".
chunks = []
for i in range(64):  # 4 GiB at most
    chunks.append(b"\x01" * (64 << 20))
    print(f"{(i + 1) * 64} MiB", flush=True)
print("ESCAPED: 4 GiB allocated")
