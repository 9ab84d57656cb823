# escape: (workload) multiprocessing.Pool(2).map with the fork start method, plus a Queue and a Process
# expect: pass
# timeout: 30
import multiprocessing as mp


def square(x):
    return x * x


def producer(q):
    q.put("from child")


if __name__ == "__main__":
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        assert pool.map(square, range(100)) == [x * x for x in range(100)]
    q = ctx.Queue()
    p = ctx.Process(target=producer, args=(q,))
    p.start()
    assert q.get(timeout=10) == "from child"
    p.join(10)
    assert p.exitcode == 0
    print("PASS")
