# escape: none: the workload an agent runs on the user's folders (MCP_EXEC_MOUNTS): pandas reads a CSV from the read-only mount and writes a summary to the read-write one
# expect: pass
import os

import pandas as pd

DATA = "/var/tmp/mcp-exec-test-mounts/data"
RESULTS = "/var/tmp/mcp-exec-test-mounts/results"
df = pd.read_csv(f"{DATA}/rain.csv")
assert len(df) == 2000 and list(df.columns) == ["city", "year", "rain_mm"], df.shape
summary = df.groupby("city")["rain_mm"].sum()
out = f"{RESULTS}/summary-{os.urandom(6).hex()}.csv"  # pids repeat across pid namespaces
summary.to_csv(out)
back = pd.read_csv(out)
assert len(back) == 40, back.shape
os.remove(out)
print("PASS")
