# escape: read the zygote's arguments (the supervisor's pid, every limit, the host's cgroup paths) from the command line of the run's init or of the zygote, and find the init keeping capabilities
# expect: pass
# The run's init (pid 1 of the run's pid namespace) and the runner are forks
# of the zygote; in the posture without namespaces the zygote itself is the
# runner's parent. Every process whose command line names __zygote must show
# nothing else, and the init must hold no capability at all.
import os
import sys

seen = []
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
    except OSError:
        continue
    if b"__zygote" not in cmd:
        continue
    args = [a.decode(errors="replace") for a in cmd.split(b"\0") if a]
    seen.append((pid, args))
    if args != ["mcp-exec", "__zygote"]:
        print(f"ESCAPED: pid {pid} shows the zygote's arguments: {args[:8]}")
        sys.exit(1)
    if pid == "1":
        with open("/proc/1/status") as f:
            caps = {k: int(v.split()[0], 16) for k, v in
                    (line.split(":", 1) for line in f if line.startswith("Cap"))}
        kept = {k: hex(v) for k, v in caps.items() if v and k in ("CapPrm", "CapEff", "CapBnd", "CapAmb")}
        if kept:
            print(f"ESCAPED: the run's init keeps capabilities: {kept}")
            sys.exit(1)
print("saw", [pid for pid, _ in seen])
print("PASS")
