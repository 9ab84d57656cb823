// The real image, run the way the README's client configs run it, driven by
// the official MCP TypeScript SDK client. scripts/check-image builds the
// unchanged Dockerfile with podman and runs this file once per image:
//   MCP_EXEC_IMAGE         the image to run (e.g. localhost/mcp-exec-test:trixie)
//   MCP_EXEC_IMAGE_SUITE   bookworm or trixie: which versions to expect
//   MCP_EXEC_PODMAN_ARGS   the harness's own flags (tests/image/posture.mjs)
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';

import { Client } from '../client/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
import { StreamableHTTPClientTransport } from '../client/node_modules/@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js';
import { brief, connectMcpExec, freePort, ok } from '../client/mcp_client.mjs';
import { HARNESS, POSTURE } from './posture.mjs';

const run = promisify(execFile);
const IMAGE = process.env.MCP_EXEC_IMAGE;
const SUITE = process.env.MCP_EXEC_IMAGE_SUITE || 'trixie';
const PROFILE = process.env.MCP_EXEC_IMAGE_PROFILE || "podman's default";
assert.ok(IMAGE, 'MCP_EXEC_IMAGE names the image (scripts/check-image sets it)');

// The posture without --network none: a published port needs a network.
const HTTP_POSTURE = POSTURE.slice(2);

const EXPECT = {
  bookworm: { python: '3.11', numpy: '1.', pandas: '1.5', matplotlib: '3.6' },
  trixie: { python: '3.13', numpy: '2.', pandas: '2.', matplotlib: '3.10' },
}[SUITE];
assert.ok(EXPECT, `MCP_EXEC_IMAGE_SUITE is bookworm or trixie, not ${SUITE}`);

let seq = 0;
const containerName = (what) => `mcp-exec-test-${process.pid}-${what}-${seq++}`;

function stdioArgs(name, extra = []) {
  return ['run', '--rm', '-i', '--name', name, ...HARNESS, ...POSTURE, ...extra, IMAGE];
}

async function call(client, args, timeout = 120_000) {
  return client.callTool({ name: 'exec', arguments: args }, undefined, { timeout });
}

// Waits for the podman process behind an SDK stdio transport to exit.
function exitOf(transport, ms = 30_000) {
  const proc = transport._process;
  assert.ok(proc, 'the transport has its podman process');
  if (proc.exitCode !== null) return Promise.resolve({ code: proc.exitCode, signal: proc.signalCode });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`podman did not exit within ${ms} ms`)), ms);
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

describe(`the image ${IMAGE} (${SUITE}, ${PROFILE} seccomp profile) in the README's posture over stdio`, () => {
  let conn;
  const name = containerName('stdio');
  before(async () => {
    conn = await connectMcpExec({ command: 'podman', args: stdioArgs(name), timeoutMs: 120_000 });
  });
  after(async () => {
    await conn?.client.close();
    spawnSync('podman', ['rm', '-f', '--ignore', name]);
  });

  it('locks runs down with what the profile allows', async () => {
    // The server answers initialize during its warm-up and logs this line
    // after it; tools/list waits for the warm-up. stderr reaches us through
    // conmon on its own pipe: it may trail an answer on stdout.
    await conn.client.listTools();
    const sandboxLine = () => conn.serverLog().split('\n').find((l) => l.includes('"event":"sandbox"'));
    for (let i = 0; i < 100 && !sandboxLine(); i++) await new Promise((r) => setTimeout(r, 100));
    const sandbox = sandboxLine() && JSON.parse(sandboxLine());
    assert.ok(sandbox, `a sandbox line in the start log:\n${conn.serverLog()}`);
    assert.equal(sandbox.refusal, '', 'every required layer holds');
    // One short line: the layers by name (their details are doctor's).
    assert.ok(sandboxLine().length < 1024, `the sandbox line is short: ${sandboxLine()}`);
    const active = new Set(sandbox.active);
    for (const layer of ['seccomp', 'network', 'no_new_privs', 'capabilities', 'rlimits']) {
      assert.ok(active.has(layer), `${layer} is active: ${sandboxLine()}`);
    }
    // Docker's rules refuse the server every namespace; podman's allow a
    // network namespace per run.
    assert.equal(active.has('network_namespace'), !PROFILE.startsWith('docker'), sandboxLine());
  });

  it('announces Python, the six packages and the extras with their versions', async () => {
    const { tools } = await conn.client.listTools();
    const desc = tools.find((t) => t.name === 'exec').description;
    assert.match(desc, new RegExp(`Run Python ${EXPECT.python.replace('.', '\\.')}\\.\\d+ `));
    for (const pkg of ['numpy', 'pandas', 'PyYAML', 'Jinja2', 'Pillow', 'matplotlib', 'tabulate', 'openpyxl']) {
      assert.match(desc, new RegExp(`${pkg} \\d`), `${pkg} with its version in: ${desc}`);
    }
    assert.match(desc, /memory 96 MiB/, 'a run gets 3/8 of the container\'s 256 MiB');
    assert.match(desc, /files in the working directory 64 MiB/, 'and a quarter of it for files');
  });

  it('imports the six packages and returns a figure as image content', async () => {
    const code = [
      'import sys, numpy, pandas, yaml, jinja2, PIL, matplotlib',
      'import matplotlib.pyplot as plt',
      'print(sys.version.split()[0], numpy.__version__, pandas.__version__, matplotlib.__version__)',
      'df = pandas.DataFrame({"x": [1, 2, 3], "y": [1, 4, 9]})',
      'print(df.to_markdown(index=False).splitlines()[0])',
      'print(yaml.safe_dump({"a": 1}).strip(), jinja2.Template("{{ n }}").render(n=7), PIL.__version__ > "")',
      'plt.plot(df.x, df.y); plt.show()',
    ].join('\n');
    const { out, extra } = ok(await call(conn.client, { code }));
    const [py, np, pd, mpl] = out.stdout.split('\n')[0].split(' ');
    assert.ok(py.startsWith(EXPECT.python), out.stdout);
    assert.ok(np.startsWith(EXPECT.numpy), out.stdout);
    assert.ok(pd.startsWith(EXPECT.pandas), out.stdout);
    assert.ok(mpl.startsWith(EXPECT.matplotlib), out.stdout);
    assert.match(out.stdout, /\|\s+x \|\s+y \|/, 'tabulate renders to_markdown');
    assert.match(out.stdout, /a: 1 7 True/);
    const images = extra.filter((c) => c.type === 'image');
    assert.equal(images.length, 1, brief(out));
    assert.equal(images[0].mimeType, 'image/png');
    assert.equal(Buffer.from(images[0].data, 'base64').subarray(1, 4).toString(), 'PNG');
  });

  it('what code a current model writes works on this Python', { skip: SUITE !== 'trixie' && 'needs trixie' }, async () => {
    const code = [
      'import io, numpy as np, pandas as pd',
      'type Pair = tuple[int, int]',
      'df = pd.DataFrame({"a": [1, 2]})',
      'print(df.map(lambda v: v * 10).a.tolist())',
      'print(np.trapezoid([1, 2, 3]))',
      'print(pd.read_csv(io.StringIO("a\\n1\\n"), dtype_backend="numpy_nullable").a.dtype)',
      's = pd.Series([1, 5])',
      'print(s.case_when([(s > 2, 0)]).tolist())',
    ].join('\n');
    const { out } = ok(await call(conn.client, { code }));
    assert.equal(out.stdout, '[10, 20]\n4.0\nInt64\n[1, 0]\n', brief(out));
  });

  it('takes files in and returns out/ files, an Excel one included', async () => {
    const code = [
      'import os, pandas as pd',
      'df = pd.read_csv("data/in.csv")',
      'os.makedirs("out", exist_ok=True)',
      'df.assign(z=df.x * 2).to_csv("out/result.csv", index=False)',
      'df.to_excel("out/result.xlsx", index=False)',
      'print(pd.read_excel("out/result.xlsx").x.sum())',
    ].join('\n');
    const { out, extra } = ok(await call(conn.client, { code, files: { 'data/in.csv': 'x\n1\n2\n' } }));
    assert.equal(out.stdout, '3\n', brief(out));
    assert.deepEqual(out.files, ['out/result.csv', 'out/result.xlsx']);
    const csv = extra.find((c) => c.type === 'resource' && c.resource.uri === 'file:///out/result.csv');
    assert.equal(csv?.resource.text, 'x,z\n1,2\n2,4\n');
  });

  it('keeps a session between calls', async () => {
    ok(await call(conn.client, { code: 'import pandas as pd\nframe = pd.DataFrame({"v": range(10)})', session: 'img' }));
    const { out } = ok(await call(conn.client, { code: 'print(int(frame.v.sum()))', session: 'img' }));
    assert.equal(out.stdout, '45\n');
  });

  it('ends a memory hog with reason memory, inside the container\'s 256 MiB', async () => {
    const { out } = ok(await call(conn.client, { code: 'x = bytearray(200 << 20)\nprint("allocated")' }));
    assert.equal(out.reason, 'memory', brief(out));
    assert.notEqual(out.exit_code, 0);
    const again = ok(await call(conn.client, { code: 'print("alive")' })).out;
    assert.equal(again.stdout, 'alive\n', 'the server survived the hog');
  });

  it('bounds a fork bomb, and answers the next call', async () => {
    const code = [
      'import os, time',
      'n = 0',
      'try:',
      '    for _ in range(10000):',
      '        if os.fork() == 0:',
      '            time.sleep(30)',
      '            os._exit(0)',
      '        n += 1',
      'except OSError as e:',
      '    print("stopped after", n, "children:", e.strerror)',
    ].join('\n');
    const { out } = ok(await call(conn.client, { code, timeout_s: 20 }));
    // Two correct mechanisms race here, and either may win: the bomb stops
    // itself when fork fails at the process limit, or the zygote's watch
    // (once a second, while the session of the test above lives beside it)
    // ends the run for holding more than its share (reason processes). The
    // invariant is the bound, and the next call answered.
    if (out.reason === 'processes') {
      assert.equal(out.exit_code, -1, brief(out));
    } else {
      assert.match(out.stdout, /stopped after \d+ children/, brief(out));
      const n = Number(out.stdout.match(/after (\d+)/)[1]);
      assert.ok(n < 128, `fewer children than --pids-limit 128: ${n}`);
    }
    const again = ok(await call(conn.client, { code: 'print("alive")' })).out;
    assert.equal(again.stdout, 'alive\n');
  });

  it('has no network', async () => {
    const code = [
      'import socket',
      'try:',
      '    socket.socket(socket.AF_INET, socket.SOCK_STREAM)',
      '    print("socket made")',
      'except OSError as e:',
      '    print("refused:", e.strerror)',
      'try:',
      '    socket.getaddrinfo("deb.debian.org", 80)',
      '    print("resolved")',
      'except OSError as e:',
      '    print("no resolution")',
    ].join('\n');
    const { out } = ok(await call(conn.client, { code }));
    assert.match(out.stdout, /^refused: /, brief(out));
    assert.match(out.stdout, /no resolution/);
  });

  it('exits 0 on EOF after answering', async () => {
    const { out } = ok(await call(conn.client, { code: 'print("last")' }));
    assert.equal(out.stdout, 'last\n');
    const exited = exitOf(conn.transport);
    conn.transport._process.stdin.end();
    assert.deepEqual(await exited, { code: 0, signal: null }, conn.serverLog());
  });
});

describe(`the image ${IMAGE} (${SUITE}, ${PROFILE} seccomp profile) with the user's folders (README: -v ... -e MCP_EXEC_MOUNTS=...)`, () => {
  // The README's one-line form, a project folder read-only at /data, and a
  // results folder read-write at /results, the same path on both sides.
  let conn, data, results;
  const name = containerName('mounts');
  before(async () => {
    data = mkdtempSync('/var/tmp/mcp-exec-image-data-');
    results = mkdtempSync('/var/tmp/mcp-exec-image-results-');
    chmodSync(data, 0o755);
    chmodSync(results, 0o777);  // the server's uid in the container is 65532
    writeFileSync(`${data}/sales.csv`, 'region,amount\nnorth,10\nsouth,32\nnorth,5\n');
    chmodSync(`${data}/sales.csv`, 0o666);  // only the mount may refuse a write
    conn = await connectMcpExec({
      command: 'podman',
      args: stdioArgs(name, [
        '-v', `${data}:/data:ro`, '-v', `${results}:/results`,
        '-e', 'MCP_EXEC_MOUNTS=/data:/data:ro,/results:/results:rw',
      ]),
      timeoutMs: 120_000,
    });
  });
  after(async () => {
    await conn?.client.close();
    spawnSync('podman', ['rm', '-f', '--ignore', name]);
    rmSync(data, { recursive: true, force: true });
    rmSync(results, { recursive: true, force: true });
  });

  it('names the folders in the tool description', async () => {
    const { tools } = await conn.client.listTools();
    const desc = tools.find((t) => t.name === 'exec').description;
    assert.match(desc, /`\/data` \(read-only\): the user's files/, desc);
    assert.match(desc, /`\/results` \(read-write\): the user's files, and what you write there lands on the user's disk/, desc);
  });

  it('reads a CSV from /data with pandas, refuses a write there, and writes a result to the host', async () => {
    const code = [
      'import pandas as pd',
      'df = pd.read_csv("/data/sales.csv")',
      'print(df.groupby("region").amount.sum().to_dict())',
      'try:',
      '    open("/data/sales.csv", "a")',
      'except OSError as e:',
      '    print("read-only:", e.strerror)',
      'df.groupby("region").amount.sum().to_csv("/results/by_region.csv")',
    ].join('\n');
    const { out } = ok(await call(conn.client, { code }));
    assert.equal(out.stdout, "{'north': 15, 'south': 32}\nread-only: Read-only file system\n", brief(out));
    assert.equal(readFileSync(`${results}/by_region.csv`, 'utf8'), 'region,amount\nnorth,15\nsouth,32\n');
  });
});

describe(`the image ${IMAGE} (${SUITE}, ${PROFILE} seccomp profile): podman stop`, () => {
  it('SIGTERM to the server as PID 1: the running call is answered, exit 0', async () => {
    const name = containerName('stop');
    const conn = await connectMcpExec({ command: 'podman', args: stdioArgs(name), timeoutMs: 120_000 });
    try {
      const exited = exitOf(conn.transport, 120_000);
      // The warm-up first: a call sent before it ends waits for it, and a
      // stop then answers "the server stopped before the code ran" (right,
      // but not what this test is about). Then the stop comes once the run
      // is seen running (its progress carries its output so far), not after
      // a fixed wait a slow day outlasts.
      ok(await call(conn.client, { code: 'print(1)' }));
      let seenRunning;
      const running = new Promise((resolve) => (seenRunning = resolve));
      const pending = conn.client.callTool(
        { name: 'exec', arguments: { code: 'import time\nprint("started", flush=True)\ntime.sleep(20)' } },
        undefined,
        {
          timeout: 120_000,
          onprogress: (p) => {
            if (/started/.test(p.message ?? '')) seenRunning();
          },
        },
      );
      await Promise.race([running, new Promise((r) => setTimeout(r, 30_000))]);
      await run('podman', ['stop', '-t', '30', name]);
      const result = await pending;
      const { out } = ok(result);
      assert.equal(out.stdout, 'started\n', brief(result));
      assert.equal(out.reason, 'shutdown', brief(result));
      assert.deepEqual(await exited, { code: 0, signal: null }, conn.serverLog());
    } finally {
      await conn.client.close();
      spawnSync('podman', ['rm', '-f', '--ignore', name]);
    }
  });
});

describe(`the image ${IMAGE} (${SUITE}, ${PROFILE} seccomp profile) over HTTP, published on 127.0.0.1 only`, () => {
  const name = containerName('http');
  const token = 'image-test-token-0123456789abcdef';
  let port;
  let origin;
  before(async () => {
    port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    await run('podman', [
      'run', '-d', '--name', name, ...HARNESS, ...HTTP_POSTURE,
      '-p', `127.0.0.1:${port}:8080`,
      '-e', 'MCP_EXEC_TRANSPORT=http', '-e', `MCP_EXEC_AUTH_TOKEN=${token}`,
      IMAGE,
    ]);
    const deadline = Date.now() + 120_000;
    for (;;) {
      const status = await fetch(`${origin}/readyz`).then((r) => r.status, () => 0);
      if (status === 200) break;
      if (Date.now() > deadline) {
        const logs = spawnSync('podman', ['logs', name], { encoding: 'utf8' });
        throw new Error(`not ready: /readyz ${status}\n${logs.stdout}${logs.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  after(() => {
    spawnSync('podman', ['rm', '-f', '--ignore', name]);
  });

  it('listens on 127.0.0.1 only', async () => {
    const { stdout } = await run('podman', ['port', name]);
    assert.equal(stdout.trim(), `8080/tcp -> 127.0.0.1:${port}`);
  });

  it('/healthz and /readyz without the token, /metrics only with it', async () => {
    assert.equal((await fetch(`${origin}/healthz`)).status, 200);
    assert.equal((await fetch(`${origin}/readyz`)).status, 200);
    assert.equal((await fetch(`${origin}/metrics`)).status, 401);
    const metrics = await fetch(`${origin}/metrics`, { headers: { 'X-MCP-AUTH': token } });
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /mcp_exec_/);
  });

  it('refuses MCP without the token, runs code with it', async () => {
    const bare = await fetch(`${origin}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(bare.status, 401);
    const transport = new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), {
      requestInit: { headers: { 'X-MCP-AUTH': token } },
    });
    const client = new Client({ name: 'image-test', version: '0.0.0' });
    await client.connect(transport);
    try {
      const { out } = ok(await call(client, { code: 'import pandas as pd\nprint(pd.Series([1, 2, 3]).sum())' }));
      assert.equal(out.stdout, '6\n');
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });

  it('podman stop: SIGTERM, exit 0', async () => {
    await run('podman', ['stop', '-t', '30', name]);
    const { stdout } = await run('podman', ['inspect', '--format', '{{.State.ExitCode}}', name]);
    assert.equal(stdout.trim(), '0');
  });
});
