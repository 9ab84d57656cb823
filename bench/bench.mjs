// Latency benchmark: mcp-exec, driven over stdio by the official MCP SDK
// client, against the reference design it replaces: a fresh /usr/bin/python3
// per call, in a fresh temporary directory, with the code passed as a file
// (as the Go reference server does).
//
//   (cd tests/client && npm ci)   # the SDK, pinned once for tests and bench
//   node bench/bench.mjs [--n-mcp=30] [--n-ref=10] [--warmup=3] [--mem-sessions=4]
//                        [--conc-calls=200] [--conc-max-s=20] [--conc-levels=1,2,4,8]
//                        [--only=print,pandas,session_print,session_memory,concurrency,preload,eras,mounts]
//                        [--quick] [--plot] [--json-out=FILE]
//
// The same settings can come from BENCH_N_MCP, BENCH_N_REF, BENCH_WARMUP,
// BENCH_MEM_SESSIONS, BENCH_CONC_CALLS, BENCH_CONC_MAX_S, BENCH_CONC_LEVELS
// and BENCH_ONLY (flags win); MCP_EXEC_BIN selects the server binary. Calls
// are sequential and timed end to end on the client side. Besides the
// one-shot snippets it times calls into live sessions (the exec tool's
// `session`: session_print, session_pandas, each against its one-shot
// counterpart and the reference), and then, with those sessions idle, reads
// the memory of idle sessions on the host (session_memory: PSS from
// /proc/<pid>/smaps_rollup, so run it as root; it is skipped, saying so,
// when those cannot be read). Unless MCP_EXEC_MAX_PY_SESSIONS is set, the
// server gets it set to the number of sessions the bench keeps (the default
// follows the machine's memory and can be as low as 2).
//
// Then throughput and latency against concurrency (`concurrency`): print(1)
// with exactly k calls outstanding (k = 1, 2, 4, 8) over ONE client
// connection, first to a fresh server on stdio, then to a fresh server on
// streamable HTTP (127.0.0.1 only); --conc-calls timed calls per level, or as
// many as --conc-max-s seconds allow, after warmup x k untimed ones. Those
// two servers run with MCP_EXEC_MAX_CONCURRENT unset (its default: the
// number of CPUs) and MCP_EXEC_MAX_QUEUE at 64 (at least the highest level),
// so that no call waits in vain for a place; a refused call fails the bench.
//
// Then the protocol eras (`eras`, bench/eras.mjs): print(1), one-shot and
// into a session, through the v1 client (2025-11-25) and the v2 client
// pinned to 2026-07-28, over stdio and streamable HTTP, and the v2 client's
// connect over stdio in legacy and auto mode.
//
// Then the user's data (`mounts`, bench/mounts.mjs): a 70 KB CSV read with
// pandas from a read-only host folder (MCP_EXEC_MOUNTS) against the same CSV
// passed in `files`, alternating on one server.
//
// --quick: tiny counts (n-mcp 3, n-ref 1, warm-up 0, 2 sessions for memory,
// 20 calls per concurrency level, 5 s per level at most) unless given as
// flags, and its parts two at a time, to prove the whole bench works end to
// end (CI); its figures are rough. --json-out=FILE
// saves the summary; --plot draws it with bench/plot.py (Debian's
// /usr/bin/python3 and its matplotlib) into bench/bench.png. The last line
// is the summary as JSON, prefixed with "BENCH_JSON ". Exits non-zero if any
// call fails.
import { spawn } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { connectHttpClient, connectMcpExec, serverBin, startHttpServer } from '../tests/client/mcp_client.mjs';
import { printEras, runEras } from './eras.mjs';
import { printMounts, runMounts } from './mounts.mjs';
import { childrenOf, descendantsOf, findZygote, processTable, pssKiB } from './procfs.mjs';

const REFERENCE_PYTHON = '/usr/bin/python3';
const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
// --plot: bench/plot.py, run by Debian's Python (it has matplotlib), draws the
// summary into bench/bench.png.
const PLOT_SCRIPT = path.join(BENCH_DIR, 'plot.py');
const PLOT_PNG = path.join(BENCH_DIR, 'bench.png');

// A 100,000-row frame, and a query on it: a session builds the frame once
// and then only queries it; a one-shot call (and the reference) must build
// it every time. Deterministic, so that the output checks the run.
const PANDAS_FRAME = [
  'import pandas as pd, numpy as np',
  "df = pd.DataFrame({'k': np.arange(100000) % 10, 'v': np.arange(100000) % 7 * 0.5})",
  '',
].join('\n');
const PANDAS_QUERY = "print(round(df.groupby('k').v.mean().sum(), 6))\n";
const PANDAS_ANSWER = '14.99975\n';

// Each snippet's expected stdout doubles as a check that both sides ran it.
const SNIPPETS = [
  { name: 'print', code: 'print(1)\n', expect: '1\n' },
  {
    name: 'pandas',
    code: [
      'import pandas as pd',
      "df = pd.DataFrame({'k': [1, 2, 1], 'v': [1, 2, 3]})",
      "print(df.groupby('k').v.sum().to_dict())",
    ].join('\n'),
    expect: '{1: 4, 2: 2}\n',
  },
  {
    // The one-shot counterpart of session_pandas: build the frame, query it.
    name: 'pandas_100k',
    code: PANDAS_FRAME + PANDAS_QUERY,
    expect: PANDAS_ANSWER,
  },
  {
    name: 'matplotlib',
    code: [
      'import matplotlib',
      "matplotlib.use('Agg')",
      'import matplotlib.pyplot as plt',
      'fig, ax = plt.subplots()',
      'ax.plot([1, 2, 3], [1, 4, 9])',
      "fig.savefig('plot.png')",
      "with open('plot.png', 'rb') as f:",
      "    print(f.read(8) == b'\\x89PNG\\r\\n\\x1a\\n')",
    ].join('\n'),
    expect: 'True\n',
  },
  {
    // Print-heavy code: 200,000 short lines. The run's streams are kept
    // flushed (so that output survives a deadline or a crash) without making
    // every print a write: this is what that costs.
    name: 'print_flood',
    code: 'for _ in range(200000):\n    print("x")\n',
    expect: 'x\n'.repeat(200000),
  },
  {
    // A figure returned as an MCP image item (plt.show()); the reference,
    // which has no way to return one, saves the PNG to a file.
    name: 'plot_image',
    code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()\n',
    refCode:
      "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" +
      "plt.plot([1, 2, 3], [1, 4, 9])\nplt.savefig('plot.png')\n",
    expect: '',
    images: 1,
  },
  {
    // The acceptance's import check: all six packages, already imported in
    // the zygote; the reference pays the cold imports on every call.
    name: 'imports',
    code: 'import numpy, pandas, matplotlib.pyplot, PIL.Image, yaml, jinja2\nprint("ok")\n',
    expect: 'ok\n',
  },
];

// Calls into a live session (the exec tool's `session`): one untimed call
// starts the session and runs setup, then the usual warm-up and timed calls
// run code in it. oneShot: the snippet that does the same work in a fresh
// process (measured with it, on both sides, for the ratios).
const SESSION_SCENARIOS = [
  {
    name: 'session_print',
    setup: 'print(1)\n',
    setupExpect: '1\n',
    code: 'print(1)\n',
    expect: '1\n',
    oneShot: 'print',
  },
  {
    name: 'session_pandas',
    setup: PANDAS_FRAME,
    setupExpect: '',
    code: PANDAS_QUERY,
    expect: PANDAS_ANSWER,
    oneShot: 'pandas_100k',
  },
];

// The memory of idle sessions (see measureSessionMemory): its own name for
// --only.
const SESSION_MEMORY = 'session_memory';
// Throughput and latency against concurrency (see measureConcurrency): its
// own name for --only.
const CONCURRENCY = 'concurrency';
// The protocol eras side by side (bench/eras.mjs): its own name for --only.
const ERAS = 'eras';
// A CSV from a host folder against the same in `files` (bench/mounts.mjs).
const MOUNTS = 'mounts';

// An operator's own package (MCP_EXEC_PRELOAD): imported cold in every run on
// a default server, against already imported on a server that preloads it.
// Debian's python3-sympy (scripts/deps/test.txt); skipped, saying so, where
// Debian's python3 cannot import it.
const PRELOAD = 'preload';
const PRELOAD_MODULE = 'sympy';
const PRELOAD_CALL = {
  name: `import ${PRELOAD_MODULE}`,
  code: `import ${PRELOAD_MODULE}\nprint(${PRELOAD_MODULE}.__version__ is not None)\n`,
  expect: 'True\n',
};

// The counts, by flag: [environment variable, default, --quick's, minimum].
const COUNTS = {
  'n-mcp': ['BENCH_N_MCP', 30, 3, 1],
  'n-ref': ['BENCH_N_REF', 10, 1, 1],
  warmup: ['BENCH_WARMUP', 3, 0, 0],
  'mem-sessions': ['BENCH_MEM_SESSIONS', 4, 2, 1],
  'conc-calls': ['BENCH_CONC_CALLS', 200, 20, 1],
  'conc-max-s': ['BENCH_CONC_MAX_S', 20, 5, 1],
};

function settings() {
  const { values } = parseArgs({
    options: {
      ...Object.fromEntries(Object.keys(COUNTS).map((name) => [name, { type: 'string' }])),
      'conc-levels': { type: 'string', default: process.env.BENCH_CONC_LEVELS ?? '1,2,4,8' },
      only: { type: 'string', default: process.env.BENCH_ONLY ?? '' },
      quick: { type: 'boolean', default: false },
      plot: { type: 'boolean', default: false },
      'json-out': { type: 'string' },
    },
  });
  // --only=print,pandas: a subset of the snippets (e.g. to compare with a
  // build that predates some of them). A session scenario brings its
  // one-shot counterpart along; session_memory is the memory of idle
  // sessions, concurrency the calls with several in flight.
  let sessions = [...SESSION_SCENARIOS];
  let memory = true;
  let concurrency = true;
  let preload = true;
  let eras = true;
  let mounts = true;
  if (values.only) {
    const keep = values.only.split(',');
    const known = [...SNIPPETS, ...SESSION_SCENARIOS]
      .map((s) => s.name)
      .concat(SESSION_MEMORY, CONCURRENCY, PRELOAD, ERAS, MOUNTS);
    const unknown = keep.filter((k) => !known.includes(k));
    if (unknown.length) throw new Error(`--only: unknown snippet ${unknown.join(', ')}`);
    sessions = SESSION_SCENARIOS.filter((s) => keep.includes(s.name));
    memory = keep.includes(SESSION_MEMORY);
    concurrency = keep.includes(CONCURRENCY);
    preload = keep.includes(PRELOAD);
    eras = keep.includes(ERAS);
    mounts = keep.includes(MOUNTS);
    const oneShots = keep.concat(sessions.map((s) => s.oneShot));
    SNIPPETS.splice(0, SNIPPETS.length, ...SNIPPETS.filter((s) => oneShots.includes(s.name)));
  }
  // A flag wins; then --quick's count; then the environment; then the default.
  const count = (name) => {
    const [envName, fallback, quick, min] = COUNTS[name];
    const raw = values[name] ?? (values.quick ? String(quick) : (process.env[envName] ?? String(fallback)));
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min} (got ${raw})`);
    return n;
  };
  const levels = values['conc-levels'].split(',').map(Number);
  if (!levels.length || levels.some((k) => !Number.isInteger(k) || k < 1 || k > 64)) {
    throw new Error(`--conc-levels must be integers from 1 to 64, comma-separated (got ${values['conc-levels']})`);
  }
  return {
    quick: values.quick,
    plot: values.plot,
    jsonOut: values['json-out'],
    nMcp: count('n-mcp'),
    nRef: count('n-ref'),
    warmup: count('warmup'),
    memSessions: count('mem-sessions'),
    concCalls: count('conc-calls'),
    concMaxS: count('conc-max-s'),
    concLevels: levels,
    sessions,
    memory,
    concurrency,
    preload,
    eras,
    mounts,
  };
}

let serverSeen = null;  // for the header when no other part started a server

// p50/p99 of PRELOAD_CALL on a server of its own, with env added.
async function measurePreload(env, warmup, n) {
  const { client } = await connectMcpExec({ clientName: 'mcp-exec-bench-preload', env });
  try {
    const results = await measure(() => callMcpExec(client, PRELOAD_CALL), warmup, n);
    serverSeen ??= client.getServerVersion();
    return summarize(PRELOAD_CALL.name, env.MCP_EXEC_PRELOAD ? 'preloaded' : 'cold', results.map((r) => r[0]), results.map((r) => r[1]));
  } finally {
    await client.close();
  }
}

// The module cold in every run against preloaded, or why it was skipped.
async function runPreload(opts) {
  const probe = await runProcess(REFERENCE_PYTHON, ['-c', `import ${PRELOAD_MODULE}`], {}).catch((e) => e);
  if (probe instanceof Error || probe.code !== 0) {
    return { skipped: `${REFERENCE_PYTHON} cannot import ${PRELOAD_MODULE} (apt-get install python3-${PRELOAD_MODULE})` };
  }
  const cold = await measurePreload({}, 1, Math.max(1, Math.min(opts.nRef, 10)));
  const preloaded = await measurePreload({ MCP_EXEC_PRELOAD: PRELOAD_MODULE }, opts.warmup, opts.nMcp);
  return { module: PRELOAD_MODULE, cold, preloaded, ratio_cold_p50_over_preloaded_p50: Math.round((cold.p50_ms / preloaded.p50_ms) * 10) / 10 };
}

// Nearest-rank percentile of an ascending array.
function percentile(sorted, p) {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

function summarize(snippet, side, samples, serverDurations) {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (x) => Math.round(x * 100) / 100;
  const row = {
    snippet,
    side,
    n: sorted.length,
    p50_ms: round(percentile(sorted, 50)),
    p99_ms: round(percentile(sorted, 99)),
    min_ms: round(sorted[0]),
    max_ms: round(sorted.at(-1)),
  };
  if (serverDurations) {
    row.server_duration_p50_ms = percentile([...serverDurations].sort((a, b) => a - b), 50);
  }
  return row;
}

function checkOutput(side, snippet, stdout) {
  if (stdout !== snippet.expect) {
    throw new Error(`${side} ${snippet.name}: stdout ${JSON.stringify(stdout)}, expected ${JSON.stringify(snippet.expect)}`);
  }
}

// One call to mcp-exec; returns [client-side ms, server-reported duration_ms,
// queue_ms (the wait for a run slot)]. A refused call (isError: at capacity,
// say) fails the bench like any other failure: it is never a sample.
// session: { name, starts } to run in that session; starts: whether this call
// must be the one that starts its interpreter (session_new). A session that
// ended, or started afresh when it should have lived on, fails the bench: its
// timings would not be what they claim.
async function callMcpExec(client, snippet, session) {
  const args = { code: snippet.code };
  if (session) args.session = session.name;
  const started = performance.now();
  const result = await client.callTool({ name: 'exec', arguments: args });
  const elapsed = performance.now() - started;
  const out = result.structuredContent;
  if (result.isError) {
    throw new Error(`mcp-exec ${snippet.name} refused (isError): ${JSON.stringify(result)}`);
  }
  if (out?.exit_code !== 0) {
    throw new Error(`mcp-exec ${snippet.name} failed: ${JSON.stringify(result)}`);
  }
  checkOutput('mcp-exec', snippet, out.stdout);
  if (session && (out.session !== session.name || out.session_new !== session.starts || out.session_ended)) {
    throw new Error(
      `mcp-exec ${snippet.name}: session ${JSON.stringify(out.session)}, session_new ${out.session_new} ` +
        `(expected ${JSON.stringify(session.name)}, ${session.starts})` +
        (out.session_ended ? `, session_ended ${JSON.stringify(out.session_ended)}` : ''),
    );
  }
  if (snippet.images !== undefined) {
    const images = result.content.filter((c) => c.type === 'image' && c.mimeType === 'image/png');
    if (images.length !== snippet.images) {
      throw new Error(`mcp-exec ${snippet.name}: ${images.length} image items, expected ${snippet.images}`);
    }
  }
  return [elapsed, out.duration_ms, out.queue_ms];
}

function runProcess(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

// One call in the reference design: temp dir, code file, fresh interpreter,
// captured output, cleanup. Returns the end-to-end ms.
async function callReference(snippet) {
  const started = performance.now();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-ref-'));
  try {
    await writeFile(path.join(dir, 'main.py'), snippet.refCode ?? snippet.code);
    const run = await runProcess(REFERENCE_PYTHON, ['main.py'], {
      cwd: dir,
      env: { ...process.env, MPLBACKEND: 'Agg' },
    });
    if (run.code !== 0) {
      throw new Error(`reference ${snippet.name} failed (exit ${run.code}, signal ${run.signal}): ${run.stderr}`);
    }
    checkOutput('reference', snippet, run.stdout);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return performance.now() - started;
}

// Warm-up calls, then n timed calls, one after another.
async function measure(call, warmup, n) {
  for (let i = 0; i < warmup; i++) await call();
  const results = [];
  for (let i = 0; i < n; i++) results.push(await call());
  return results;
}

// A session scenario on one connection: the untimed call that starts the
// session (and runs its setup), then warm-up and n timed calls into it.
// Returns { session, start_ms, results }.
async function measureSession(client, scenario, warmup, n) {
  const name = `bench-${scenario.name}`;
  const [startMs] = await callMcpExec(client, sessionStart(scenario.name, name, scenario.setup, scenario.setupExpect), {
    name,
    starts: true,
  });
  const results = await measure(() => callMcpExec(client, scenario, { name, starts: false }), warmup, n);
  return { session: name, start_ms: Math.round(startMs * 100) / 100, results };
}

// ---------------------------------------------------------------------------
// Throughput and latency against concurrency: print(1) with exactly k calls
// outstanding on one client connection (a closed loop: k workers, each
// sending its next call when its last one answers), for each k in turn.

const CONCURRENT_CALL = { name: 'print(1) in flight', code: 'print(1)\n', expect: '1\n' };

// The servers of the concurrency runs: MCP_EXEC_MAX_CONCURRENT unset (its
// default: the number of CPUs), and a queue that holds every call the
// highest level can have waiting for a slot.
function concurrencyEnv(levels) {
  return { MCP_EXEC_MAX_CONCURRENT: undefined, MCP_EXEC_MAX_QUEUE: String(Math.max(64, ...levels)) };
}

// The run limits the server states in its start log line. The server
// answers the handshake during its warm-up and logs that line after it:
// waited for (its stderr may also arrive after an answer on stdout).
async function startLimits(log) {
  const deadline = performance.now() + 30000;
  for (;;) {
    for (const line of log().split('\n')) {
      if (!line.startsWith('{')) continue;
      const m = JSON.parse(line);
      if (m.event === 'start') return { max_concurrent: m.max_concurrent, max_queue: m.max_queue };
    }
    if (performance.now() > deadline) throw new Error('the server logged no start line within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// k workers until `calls` calls have been sent or `maxMs` has passed (no new
// call after it; those in flight finish). The first failure stops them all
// and is thrown. Returns the samples and the wall time from the first call
// sent to the last answer.
async function closedLoop(client, k, calls, maxMs) {
  const samples = [];
  let sent = 0;
  let failed = false;
  let timeBound = false;
  const started = performance.now();
  const deadline = started + maxMs;
  const worker = async () => {
    while (sent < calls && !failed) {
      if (performance.now() >= deadline) {
        timeBound = true;
        return;
      }
      sent++;
      try {
        samples.push(await callMcpExec(client, CONCURRENT_CALL));
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: k }, worker));
  return { samples, wallMs: performance.now() - started, timeBound };
}

// Every level on one connection: warmup x k untimed calls, then the timed ones.
async function measureConcurrency(client, transport, { levels, calls, maxMs, warmup }) {
  const rows = [];
  for (const k of levels) {
    if (warmup > 0) await closedLoop(client, k, warmup * k, Infinity);
    const { samples, wallMs, timeBound } = await closedLoop(client, k, calls, maxMs);
    const row = summarize('print', transport, samples.map((x) => x[0]), samples.map((x) => x[1]));
    const queue = samples.map((x) => x[2]).filter((q) => typeof q === 'number').sort((a, b) => a - b);
    rows.push({
      transport,
      in_flight: k,
      n: row.n,
      wall_s: Math.round(wallMs) / 1000,
      calls_per_s: Math.round((row.n / wallMs) * 1000 * 10) / 10,
      p50_ms: row.p50_ms,
      p99_ms: row.p99_ms,
      min_ms: row.min_ms,
      max_ms: row.max_ms,
      server_duration_p50_ms: row.server_duration_p50_ms,
      queue_p50_ms: queue.length ? percentile(queue, 50) : null,
      queue_p99_ms: queue.length ? percentile(queue, 99) : null,
      time_bound: timeBound,
    });
  }
  return rows;
}

// A fresh server on stdio, then one on streamable HTTP (127.0.0.1), each
// with its own single client connection; one after the other, so that they
// never share the CPUs.
async function runConcurrency(opts) {
  const env = concurrencyEnv(opts.levels);
  const servers = {};
  const rows = [];
  let version;

  const stdio = await connectMcpExec({ clientName: 'mcp-exec-bench-concurrency', env });
  try {
    version = stdio.client.getServerVersion();
    servers.stdio = await startLimits(stdio.serverLog);
    checkQueue('stdio', servers.stdio, opts.levels);
    rows.push(...(await measureConcurrency(stdio.client, 'stdio', opts)));
  } catch (err) {
    err.message += `\nserver (stdio) stderr:\n${stdio.serverLog()}`;
    throw err;
  } finally {
    await stdio.client.close();
  }

  const server = await startHttpServer({ transport: 'http', env });
  try {
    servers.http = { ...(await startLimits(server.log)), url: String(server.url) };
    checkQueue('http', servers.http, opts.levels);
    const { client } = await connectHttpClient(server, { clientName: 'mcp-exec-bench-concurrency' });
    try {
      rows.push(...(await measureConcurrency(client, 'http', opts)));
    } finally {
      await client.close();
    }
    // The server's own count of refusals: none, or the bench is wrong.
    const res = await fetch(new URL('/metrics', server.origin));
    const text = await res.text();
    const refused = /^mcp_exec_runs_total\{outcome="at_capacity"\} (\S+)$/m.exec(text);
    if (res.status !== 200) throw new Error(`GET /metrics: HTTP ${res.status}`);
    if (!refused) throw new Error('/metrics has no mcp_exec_runs_total{outcome="at_capacity"}');
    if (Number(refused[1]) !== 0) throw new Error(`the HTTP server refused ${refused[1]} runs`);
  } catch (err) {
    err.message += `\nserver (http) stderr:\n${server.log()}`;
    throw err;
  } finally {
    await server.stop();
  }
  return { server: version, servers, rows };
}

// Every call of the highest level must find a place in the queue.
function checkQueue(transport, limits, levels) {
  const waiting = Math.max(...levels) - limits.max_concurrent;
  if (!(limits.max_queue >= waiting)) {
    throw new Error(`${transport} server: max_queue ${limits.max_queue} < ${waiting} calls that would wait`);
  }
}

function printConcurrencyTable(rows) {
  const header = [
    'transport',
    'in_flight',
    'n',
    'wall_s',
    'calls/s',
    'p50_ms',
    'p99_ms',
    'server_p50_ms',
    'queue_p50_ms',
  ];
  const lines = rows.map((r) => [
    r.transport,
    String(r.in_flight),
    r.time_bound ? `${r.n}*` : String(r.n),
    r.wall_s.toFixed(2),
    r.calls_per_s.toFixed(1),
    r.p50_ms.toFixed(2),
    r.p99_ms.toFixed(2),
    String(r.server_duration_p50_ms),
    r.queue_p50_ms === null ? '-' : String(r.queue_p50_ms),
  ]);
  printColumns(header, lines, 1);
}

// The first call of a session: its setup, after a marker (an empty file the
// interpreter keeps open in its working directory) by which the memory
// section finds the session's processes on the host.
const MARKER_PREFIX = '.bench-session-';

function sessionStart(scenarioName, session, setup, expect) {
  const marker = `_bench_marker = open('${MARKER_PREFIX}${session}', 'w')\n`;
  return { name: `${scenarioName} (start)`, code: marker + setup, expect };
}

// Columns padded to their widest cell; the first `left` left-aligned.
function printColumns(header, lines, left) {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const format = (cells) => cells.map((c, i) => (i < left ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(format(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const l of lines) console.log(format(l));
}

function printTable(rows, ratios) {
  const header = ['snippet', 'side', 'n', 'p50_ms', 'p99_ms', 'server_p50_ms', 'ref_p50/mcp_p50'];
  const lines = rows.map((r) => [
    r.snippet,
    r.side,
    String(r.n),
    r.p50_ms.toFixed(2),
    r.p99_ms.toFixed(2),
    r.server_duration_p50_ms === undefined ? '-' : String(r.server_duration_p50_ms),
    r.side === 'mcp-exec' ? `${ratios[r.snippet].toFixed(1)}x` : '-',
  ]);
  printColumns(header, lines, 2);
}

// Each session scenario next to its one-shot counterpart (mcp-exec, a fresh
// process per call) and the reference (which has no sessions: it does the
// counterpart's work every call).
function printSessionTable(sessionRows) {
  const header = [
    'scenario',
    'n',
    'p50_ms',
    'p99_ms',
    'server_p50_ms',
    'start_ms',
    'one-shot',
    'one-shot p50/p99',
    'one-shot/session',
    'ref p50/p99',
    'ref/session',
  ];
  const pair = (r) => `${r.p50_ms.toFixed(2)} / ${r.p99_ms.toFixed(2)}`;
  const lines = sessionRows.map((r) => [
    r.snippet,
    String(r.n),
    r.p50_ms.toFixed(2),
    r.p99_ms.toFixed(2),
    String(r.server_duration_p50_ms),
    r.start_ms.toFixed(2),
    r.one_shot,
    pair(r.one_shot_row),
    `${r.ratio_one_shot_p50_over_session_p50.toFixed(1)}x`,
    pair(r.reference_row),
    `${r.ratio_ref_p50_over_session_p50.toFixed(1)}x`,
  ]);
  printColumns(header, lines, 1);
}

// ---------------------------------------------------------------------------
// Memory of idle sessions, read on the host. The server forks a zygote
// (`mcp-exec __zygote ...`); spare runners, runs and sessions are its
// descendants: each a subtree under one child of the zygote (with runs in pid
// namespaces of their own, an init and the interpreter under it). A session
// is the subtree whose interpreter holds its marker open; the other subtrees
// are spares (idle, locked down ahead, waiting for a run).
//
// PSS (proportional set size, the Pss: line of /proc/<pid>/smaps_rollup)
// charges a page shared by n processes 1/n to each, so the PSS of the zygote
// and all its descendants adds up to the memory they hold together. A
// session's own PSS includes its share of the zygote's pages (the imports
// every runner inherits); what a session adds is the growth of that total
// when it starts, measured here over K sessions at once.

// The session whose marker the process holds open, if any.
function markedSession(pid) {
  let fds;
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return null;
  }
  for (const fd of fds) {
    let target;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    const at = target.lastIndexOf(`/${MARKER_PREFIX}`);
    if (at >= 0) return target.slice(at + 1 + MARKER_PREFIX.length);
  }
  return null;
}

// The zygote's descendants now, grouped by subtree: { total_kib, zygote_kib,
// sessions: Map name -> { pids, kib }, spares: [{ pids, kib }] }.
function memorySnapshot(zygotePid) {
  const table = processTable();
  const zygoteKiB = pssKiB(zygotePid);
  const snap = {
    total_kib: zygoteKiB,
    zygote_kib: zygoteKiB,
    zygote_rss_kib: pssKiB(zygotePid, 'Rss'),
    sessions: new Map(),
    spares: [],
  };
  for (const top of childrenOf(table, zygotePid)) {
    const pids = [top, ...descendantsOf(table, top)];
    const kib = pids.reduce((sum, p) => sum + pssKiB(p), 0);
    snap.total_kib += kib;
    const session = pids.map(markedSession).find((name) => name !== null);
    if (session) snap.sessions.set(session, { pids, kib });
    else snap.spares.push({ pids, kib });
  }
  return snap;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A snapshot once the zygote has replaced the spares that sessions took and
// the subtrees hold still: the spares back to their number and the same
// processes in two looks 100 ms apart (up to 5 s; `settled` says whether).
async function settledSnapshot(zygote, sessions) {
  const shape = (snap) =>
    [...snap.sessions.values(), ...snap.spares]
      .flatMap((s) => s.pids)
      .sort((a, b) => a - b)
      .join(',');
  let snap = memorySnapshot(zygote.pid);
  for (const deadline = Date.now() + 5000; Date.now() < deadline; ) {
    await sleep(100);
    const next = memorySnapshot(zygote.pid);
    const ready =
      sessions.every((name) => next.sessions.has(name)) &&
      (zygote.spares === null || next.spares.length === zygote.spares) &&
      shape(next) === shape(snap);
    snap = next;
    if (ready) return { ...snap, settled: true };
  }
  return { ...snap, settled: false };
}

const mib = (kib) => Math.round((kib / 1024) * 10) / 10;

// The memory of idle sessions: those the session scenarios left (as they
// are), then the growth of the whole tree's PSS over k more sessions that
// ran print(1), and over k more that each built the 100,000-row frame.
async function measureSessionMemory(client, serverPid, scenarioSessions, k) {
  const zygote = findZygote(serverPid);
  let live = [...scenarioSessions];
  const before = await settledSnapshot(zygote, live);
  const report = {
    zygote_pid: zygote.pid,
    zygote_pss_mib: mib(before.zygote_kib),
    zygote_rss_mib: mib(before.zygote_rss_kib),
    spares: before.spares.map((s) => ({ processes: s.pids.length, pss_mib: mib(s.kib) })),
    sessions: Object.fromEntries(
      [...before.sessions].map(([name, s]) => [name, { processes: s.pids.length, pss_mib: mib(s.kib) }]),
    ),
    total_pss_mib: mib(before.total_kib),
    settled: before.settled,
    added: [],
  };
  const kinds = [
    { id: 'print', what: 'print(1)', setup: 'print(1)\n', expect: '1\n' },
    { id: 'frame', what: 'the 100,000-row DataFrame built', setup: PANDAS_FRAME, expect: '' },
  ];
  let prev = before;
  for (const kind of kinds) {
    const names = Array.from({ length: k }, (_, i) => `bench-memory-${kind.id}-${i}`);
    for (const name of names) {
      await callMcpExec(client, sessionStart(`${SESSION_MEMORY} ${kind.id}`, name, kind.setup, kind.expect), {
        name,
        starts: true,
      });
    }
    live = live.concat(names);
    const after = await settledSnapshot(zygote, live);
    const own = names.map((n) => after.sessions.get(n)?.kib ?? 0);
    report.added.push({
      sessions: k,
      what: kind.what,
      total_pss_before_mib: mib(prev.total_kib),
      total_pss_after_mib: mib(after.total_kib),
      per_session_delta_mib: mib((after.total_kib - prev.total_kib) / k),
      per_session_pss_mib: mib(own.reduce((a, b) => a + b, 0) / k),
      zygote_pss_after_mib: mib(after.zygote_kib),
      settled: after.settled,
    });
    prev = after;
  }
  // One-shot runs, looked at while they run (each holds a marker and sleeps
  // after its snippet): their own PSS, and the tree's growth with the run
  // live (its spare was taken and replaced).
  report.runs = [];
  const runKinds = [
    { id: 'print', what: 'print(1)', code: 'print(1)\n', expect: '1\n' },
    {
      id: 'pandas',
      what: 'the pandas snippet',
      code: SNIPPETS.find((x) => x.name === 'pandas')?.code,
      expect: SNIPPETS.find((x) => x.name === 'pandas')?.expect,
    },
  ];
  for (const kind of runKinds.filter((x) => x.code)) {
    const name = `bench-run-${kind.id}`;
    const running = callMcpExec(client, {
      name: `${SESSION_MEMORY} run ${kind.id}`,
      code: `_bench_marker = open('${MARKER_PREFIX}${name}', 'w')\n${kind.code}\nimport time\ntime.sleep(3)\n`,
      expect: kind.expect,
    });
    const during = await settledSnapshot(zygote, live.concat([name]));
    await running;
    report.runs.push({
      what: kind.what,
      own_pss_mib: mib(during.sessions.get(name)?.kib ?? 0),
      tree_growth_mib: mib(during.total_kib - prev.total_kib),
      settled: during.settled && during.sessions.has(name),
    });
  }
  return report;
}

function printSessionMemory(m) {
  const unsettled = (settled) => (settled ? '' : ' (not settled within 5 s)');
  console.log(
    "memory of idle sessions, MiB of PSS (the Pss: of /proc/<pid>/smaps_rollup: a page shared by n processes " +
      "counts 1/n) of the zygote and its descendants on the host; a session is the subtree under the zygote " +
      "whose interpreter holds the session's marker file open, a spare any other" +
      unsettled(m.settled),
  );
  const spares = m.spares.map((s) => s.pss_mib.toFixed(1)).join(', ');
  console.log(
    `  zygote (pid ${m.zygote_pid}): ${m.zygote_pss_mib.toFixed(1)} (RSS ${m.zygote_rss_mib.toFixed(1)}, ` +
      `mostly shared with every runner); ${m.spares.length} idle spare runners: ` +
      `${spares || '-'} (each ${m.spares[0]?.processes ?? 0} processes)`,
  );
  for (const [name, s] of Object.entries(m.sessions)) {
    console.log(`  session ${name}, idle: ${s.pss_mib.toFixed(1)} (${s.processes} processes)`);
  }
  console.log(`  zygote and all its descendants: ${m.total_pss_mib.toFixed(1)}`);
  // What a session adds: the growth of the whole tree's PSS over K new
  // sessions, over K. Its own PSS is more: it includes its share of the pages
  // it still shares with the zygote and the other runners.
  for (const a of m.added) {
    console.log(
      `  ${a.sessions} more idle sessions, each after ${a.what}: total ${a.total_pss_before_mib.toFixed(1)} -> ` +
        `${a.total_pss_after_mib.toFixed(1)}, so +${a.per_session_delta_mib.toFixed(1)} per session ` +
        `(its own PSS ${a.per_session_pss_mib.toFixed(1)}, shared pages' share included; ` +
        `zygote now ${a.zygote_pss_after_mib.toFixed(1)})${unsettled(a.settled)}`,
    );
  }
  for (const r of m.runs ?? []) {
    console.log(
      `  a one-shot run of ${r.what}, while it runs: its own PSS ${r.own_pss_mib.toFixed(1)}, the tree ` +
        `+${r.tree_growth_mib.toFixed(1)} over the idle one (its spare replaced)${unsettled(r.settled)}`,
    );
  }
}

// Lockdown timings from the server's JSON log lines (event "run").
// field: lockdown_us (on the request's path) or lockdown_ahead_us (done by
// a spare runner before its request arrived). A session's later cells (cell
// 2 on) run in the interpreter its first locked down: they have none.
function lockdownStats(log, field = 'lockdown_us') {
  const us = log
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((m) => m.event === 'run' && !(m.cell > 1) && m[field] >= 0)
    .map((m) => m[field] / 1000)
    .sort((a, b) => a - b);
  if (us.length === 0) throw new Error(`the server logged no ${field} timings`);
  const pick = (q) => us[Math.min(us.length - 1, Math.ceil(q * us.length) - 1)];
  return { n: us.length, p50_ms: pick(0.5), p99_ms: pick(0.99) };
}

// Runs the parts in order, `lanes` at a time. The full bench runs them one
// after another (lanes 1), so no part's figures carry another's load.
// --quick proves the bench works end to end and asserts no figure: there
// two parts run side by side, which halves its time on two cores (most of
// it is servers warming up), and its figures say so.
async function runParts(parts, lanes) {
  const queue = [...parts];
  const lane = async () => {
    while (queue.length) await queue.shift()();
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}

async function main() {
  const opts = settings();
  const { nMcp, nRef, warmup, memSessions, sessions, memory } = opts;
  const rows = [];
  const sessionRuns = [];
  let sessionMemory = null;
  let server = null;
  let lockdown = null;
  let lockdownAhead = null;
  let concurrency = null;

  // Enough live sessions for the bench's (the default cap follows the
  // machine's memory and can be 2), unless set by the caller.
  const needSessions = sessions.length + (memory ? 2 * memSessions : 0);
  const env = {};
  if (needSessions > 0 && process.env.MCP_EXEC_MAX_PY_SESSIONS === undefined) {
    env.MCP_EXEC_MAX_PY_SESSIONS = String(Math.max(2, needSessions));
  }
  // The bench's parts, each on servers of its own: run one after another,
  // or two at a time under --quick (see runParts).
  const parts = [];
  // The snippets, sessions and memory on one stdio connection (skipped when
  // --only leaves none of them), then the reference.
  parts.push(async () => {
    if (SNIPPETS.length || sessions.length || memory) {
      const { client, transport, serverLog } = await connectMcpExec({ clientName: 'mcp-exec-bench', env });
      server = client.getServerVersion();
      try {
        for (const snippet of SNIPPETS) {
          const results = await measure(() => callMcpExec(client, snippet), warmup, nMcp);
          rows.push(summarize(snippet.name, 'mcp-exec', results.map((r) => r[0]), results.map((r) => r[1])));
        }
        for (const scenario of sessions) {
          sessionRuns.push({ scenario, ...(await measureSession(client, scenario, warmup, nMcp)) });
        }
        // With the scenarios' sessions idle (still live on this connection).
        if (memory) {
          try {
            sessionMemory = await measureSessionMemory(
              client,
              transport.pid,
              sessionRuns.map((r) => r.session),
              memSessions,
            );
          } catch (err) {
            if (!/run the bench as root/.test(err.message)) throw err;
            sessionMemory = { skipped: err.message };
          }
        }
      } catch (err) {
        err.message += `\nserver stderr:\n${serverLog()}`;
        throw err;
      } finally {
        await client.close();
      }
      lockdown = lockdownStats(serverLog());
      lockdownAhead = lockdownStats(serverLog(), 'lockdown_ahead_us');
    }

    for (const snippet of SNIPPETS) {
      const samples = await measure(() => callReference(snippet), warmup, nRef);
      rows.push(summarize(snippet.name, 'reference', samples));
    }
  });

  // Throughput and latency against concurrency, on servers of their own.
  if (opts.concurrency) {
    parts.push(async () => {
      concurrency = await runConcurrency({
        levels: opts.concLevels,
        calls: opts.concCalls,
        maxMs: opts.concMaxS * 1000,
        warmup,
      });
    });
  }
  let preload = null;
  let eras = null;
  let mounts = null;
  if (opts.eras) {
    // Second in the queue: with the first part, the longest.
    parts.splice(1, 0, async () => {
      eras = await runEras({ warmup, n: nMcp, connectRounds: opts.quick ? 1 : 5 });
    });
  }
  if (opts.preload) parts.push(async () => { preload = await runPreload(opts); });
  if (opts.mounts) parts.push(async () => { mounts = await runMounts({ warmup, n: nMcp }); });
  await runParts(parts, opts.quick ? 2 : 1);
  server ??= concurrency?.server;
  server ??= eras?.server;
  server ??= mounts?.server;
  server ??= serverSeen;

  const row = (snippet, side) => rows.find((r) => r.snippet === snippet && r.side === side);
  const p50 = (snippet, side) => row(snippet, side).p50_ms;
  const ratios = Object.fromEntries(
    SNIPPETS.map((s) => [s.name, Math.round((p50(s.name, 'reference') / p50(s.name, 'mcp-exec')) * 10) / 10]),
  );
  rows.sort((a, b) => SNIPPETS.findIndex((s) => s.name === a.snippet) - SNIPPETS.findIndex((s) => s.name === b.snippet));
  const sessionRows = sessionRuns.map(({ scenario, session, start_ms, results }) => {
    const r = summarize(scenario.name, 'mcp-exec session', results.map((x) => x[0]), results.map((x) => x[1]));
    const ratio = (side) => Math.round((p50(scenario.oneShot, side) / r.p50_ms) * 10) / 10;
    return {
      ...r,
      session,
      start_ms,
      one_shot: scenario.oneShot,
      one_shot_row: row(scenario.oneShot, 'mcp-exec'),
      reference_row: row(scenario.oneShot, 'reference'),
      ratio_one_shot_p50_over_session_p50: ratio('mcp-exec'),
      ratio_ref_p50_over_session_p50: ratio('reference'),
    };
  });

  console.log(`mcp-exec ${server?.version} (${serverBin}) vs. reference ${REFERENCE_PYTHON} per call`);
  if (opts.quick) {
    console.log('--quick: a smoke run with tiny counts, its parts two at a time: the figures are rough, not a measure');
  }
  if (rows.length || sessionRows.length) {
    console.log(`warm-up ${warmup} calls, then ${nMcp} (mcp-exec) / ${nRef} (reference) sequential calls per snippet`);
  }
  console.log();
  if (rows.length) {
    printTable(rows, ratios);
    console.log();
  }
  if (sessionRows.length) {
    // A session's calls run in one live interpreter: no fork, no lockdown,
    // its state kept. start_ms: the untimed call that started the session
    // (and ran its setup); the one-shot counterpart and the reference do the
    // whole work (for session_pandas: build the frame, then query it) on
    // every call.
    console.log(
      `sessions: one untimed call starts each session, then ${warmup} warm-up and ${nMcp} sequential calls into it; ` +
        `one-shot = the same work in a fresh process per call`,
    );
    printSessionTable(sessionRows);
    console.log();
  }
  if (sessionMemory?.skipped) {
    console.log(`memory of idle sessions: skipped (${sessionMemory.skipped})`);
    console.log();
  } else if (sessionMemory) {
    printSessionMemory(sessionMemory);
    console.log();
  }
  // The sandbox's cost per run: the runner times its own lockdown (mount and
  // ipc namespaces, tmpfs, rlimits, credentials, no_new_privs, Landlock,
  // seccomp) and the server logs it: the part a spare runner did before its
  // request arrived, and the part left on the request's path. Namespaces
  // made once in the zygote cost nothing per run.
  if (lockdown) {
    console.log(
      `lockdown per run, ahead of the request (spare runners): p50 ${lockdownAhead.p50_ms.toFixed(3)} ms, ` +
        `p99 ${lockdownAhead.p99_ms.toFixed(3)} ms (CPU spent per run, off the latency path)`,
    );
    const printP50 = row('print', 'mcp-exec')?.p50_ms;
    console.log(
      `lockdown per run, on the request's path: p50 ${lockdown.p50_ms.toFixed(3)} ms, p99 ${lockdown.p99_ms.toFixed(3)} ms ` +
        `over ${lockdown.n} runs` +
        (printP50 === undefined
          ? ''
          : ` (${((lockdown.p50_ms / printP50) * 100).toFixed(1)}% of a print(1) call; ` +
            `with the whole lockdown on the path print(1) would take about ` +
            `${(printP50 + lockdownAhead.p50_ms).toFixed(2)} ms)`),
    );
    console.log();
  }
  if (concurrency) {
    const { stdio, http } = concurrency.servers;
    console.log(
      `concurrency: print(1) with exactly in_flight calls outstanding on one client connection; up to ` +
        `${opts.concCalls} timed calls per level (or ${opts.concMaxS} s; * = stopped by the time bound), ` +
        `after ${warmup} x in_flight untimed; max_concurrent ${stdio.max_concurrent} (stdio) / ` +
        `${http.max_concurrent} (http, ${http.url}), max_queue ${stdio.max_queue} / ${http.max_queue}, ` +
        `${os.cpus().length} CPUs`,
    );
    printConcurrencyTable(concurrency.rows);
    console.log();
  }
  if (preload?.skipped) {
    console.log(`preload: skipped (${preload.skipped})`);
    console.log();
  } else if (preload) {
    const { cold, preloaded } = preload;
    console.log(
      `preload (MCP_EXEC_PRELOAD=${preload.module}): \`${PRELOAD_CALL.name}\` in a run, cold p50 ${cold.p50_ms.toFixed(1)} / ` +
        `p99 ${cold.p99_ms.toFixed(1)} ms (n ${cold.n}), preloaded p50 ${preloaded.p50_ms.toFixed(2)} / ` +
        `p99 ${preloaded.p99_ms.toFixed(2)} ms (n ${preloaded.n}): ${preload.ratio_cold_p50_over_preloaded_p50}x`,
    );
    console.log();
  }
  if (eras) {
    printEras(eras);
    console.log();
  }
  if (mounts) {
    printMounts(mounts);
    console.log();
  }
  const cpus = os.cpus();
  const summary = {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus.length,
      cpu_model: cpus[0]?.model ?? null,
      os: os.type(),
      kernel: os.release(),
      arch: os.arch(),
      mem_gib: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      node: process.version,
    },
    quick: opts.quick,
    server: { name: server?.name, version: server?.version, bin: serverBin },
    reference: REFERENCE_PYTHON,
    warmup,
    n: { 'mcp-exec': nMcp, reference: nRef },
    rows,
    ratio_ref_p50_over_mcp_p50: ratios,
    sessions: sessionRows.map(({ one_shot_row, reference_row, ...r }) => ({
      ...r,
      one_shot_p50_ms: one_shot_row.p50_ms,
      one_shot_p99_ms: one_shot_row.p99_ms,
      reference_p50_ms: reference_row.p50_ms,
      reference_p99_ms: reference_row.p99_ms,
    })),
    session_memory: sessionMemory,
    lockdown,
    lockdown_ahead: lockdownAhead,
    preload,
    eras: eras && { rows: eras.rows, raw: eras.raw, connect: eras.connect },
    mounts: mounts && { ...mounts, server: undefined },
    concurrency: concurrency && {
      snippet: CONCURRENT_CALL.code.trim(),
      levels: opts.concLevels,
      calls_per_level: opts.concCalls,
      max_s_per_level: opts.concMaxS,
      // untimed calls before each level: this times in_flight
      warmup_per_in_flight: warmup,
      servers: concurrency.servers,
      rows: concurrency.rows,
    },
  };
  const json = JSON.stringify(summary);
  if (opts.jsonOut) {
    await writeFile(opts.jsonOut, json + '\n');
    console.log(`summary: ${path.resolve(opts.jsonOut)}`);
  }
  if (opts.plot) console.log(`plot: ${await plot(json)}`);
  console.log(`BENCH_JSON ${json}`);
}

// The summary drawn by bench/plot.py into bench/bench.png; returns its path.
async function plot(json) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-plot-'));
  try {
    const file = path.join(dir, 'bench.json');
    await writeFile(file, json);
    const run = await runProcess(REFERENCE_PYTHON, [PLOT_SCRIPT, file, PLOT_PNG], {});
    if (run.code !== 0) {
      throw new Error(`${PLOT_SCRIPT} failed (exit ${run.code}, signal ${run.signal}):\n${run.stderr}${run.stdout}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return PLOT_PNG;
}

main().catch((err) => {
  console.error(`bench failed: ${err.stack ?? err}`);
  process.exitCode = 1;
});
