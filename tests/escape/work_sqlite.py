# escape: (workload) sqlite3 in memory and on a file in the workdir (with its journal/WAL)
# expect: pass
import sqlite3

mem = sqlite3.connect(":memory:")
mem.execute("create table t (k text, v int)")
mem.executemany("insert into t values (?, ?)", [("a", 1), ("b", 2), ("a", 3)])
assert mem.execute("select k, sum(v) from t group by k order by k").fetchall() == [("a", 4), ("b", 2)]
mem.close()

db = sqlite3.connect("data.db")
db.execute("pragma journal_mode=wal")
db.execute("create table t (x int)")
with db:
    db.executemany("insert into t values (?)", [(i,) for i in range(1000)])
db.close()
again = sqlite3.connect("data.db")
assert again.execute("select count(*), sum(x) from t").fetchone() == (1000, 499500)
again.close()
print("PASS")
