# escape: (workload) pandas groupby, merge, to_csv into the workdir and read back
# expect: pass
import pandas as pd

df = pd.DataFrame({"k": ["a", "b", "a", "c", "b"], "v": [1, 2, 3, 4, 5]})
g = df.groupby("k", as_index=False)["v"].sum()
names = pd.DataFrame({"k": ["a", "b", "c"], "name": ["alpha", "beta", "gamma"]})
m = g.merge(names, on="k").sort_values("k")
m.to_csv("out.csv", index=False)
back = pd.read_csv("out.csv")
assert back["v"].tolist() == [4, 7, 4], back
assert back["name"].tolist() == ["alpha", "beta", "gamma"]
assert df.describe().loc["mean", "v"] == 3.0
pivot = df.pivot_table(index="k", values="v", aggfunc="mean")
assert pivot.loc["a", "v"] == 2.0
print("PASS")
