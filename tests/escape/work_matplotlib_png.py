# escape: (workload) matplotlib: draw a figure and savefig a PNG into the workdir
# expect: pass
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

fig, ax = plt.subplots(figsize=(4, 3))
ax.plot(range(10), [x * x for x in range(10)], label="squares")
ax.set_title("escape suite")
ax.legend()
fig.savefig("plot.png", dpi=80)
plt.close(fig)
with open("plot.png", "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
assert os.path.getsize("plot.png") > 1000
print("PASS")
