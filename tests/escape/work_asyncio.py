# escape: (workload) asyncio.run: concurrent sleeps, a subprocess, a queue
# expect: pass
import asyncio
import time


async def sleeper(i):
    await asyncio.sleep(0.2)
    return i


async def main():
    t0 = time.monotonic()
    assert await asyncio.gather(*(sleeper(i) for i in range(10))) == list(range(10))
    assert time.monotonic() - t0 < 1.5  # concurrent, not 2 s in sequence
    proc = await asyncio.create_subprocess_exec("echo", "async", stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    assert out == b"async\n" and proc.returncode == 0
    shell = await asyncio.create_subprocess_shell("echo a | tr a z", stdout=asyncio.subprocess.PIPE)
    assert (await shell.communicate())[0] == b"z\n"
    q = asyncio.Queue()
    await q.put(1)
    assert await asyncio.wait_for(q.get(), 1) == 1


asyncio.run(main())
print("PASS")
