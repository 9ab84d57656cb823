// Latency benchmark: mcp-exec, driven over stdio by the official MCP SDK
// client, against the reference design it replaces: a fresh /usr/bin/python3
// per call, in a fresh temporary directory, with the code passed as a file
// (as the Go reference server does).
//
//   (cd tests/client && npm ci)   # the SDK, pinned once for tests and bench
//   node bench/bench.mjs [--n-mcp=30] [--n-ref=10] [--warmup=3] [--only=print,pandas]
//
// The same settings can come from BENCH_N_MCP, BENCH_N_REF and BENCH_WARMUP
// (flags win); MCP_EXEC_BIN selects the server binary. Calls are sequential
// and timed end to end on the client side. The last line is the summary as
// JSON, prefixed with "BENCH_JSON ". Exits non-zero if any call fails.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { connectMcpExec, serverBin } from '../tests/client/mcp_client.mjs';

const REFERENCE_PYTHON = '/usr/bin/python3';

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

function settings() {
  const { values } = parseArgs({
    options: {
      'n-mcp': { type: 'string', default: process.env.BENCH_N_MCP ?? '30' },
      'n-ref': { type: 'string', default: process.env.BENCH_N_REF ?? '10' },
      warmup: { type: 'string', default: process.env.BENCH_WARMUP ?? '3' },
      only: { type: 'string', default: process.env.BENCH_ONLY ?? '' },
    },
  });
  // --only=print,pandas: a subset of the snippets (e.g. to compare with a
  // build that predates some of them).
  if (values.only) {
    const keep = values.only.split(',');
    const unknown = keep.filter((k) => !SNIPPETS.some((s) => s.name === k));
    if (unknown.length) throw new Error(`--only: unknown snippet ${unknown.join(', ')}`);
    SNIPPETS.splice(0, SNIPPETS.length, ...SNIPPETS.filter((s) => keep.includes(s.name)));
  }
  const count = (name, min) => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min} (got ${values[name]})`);
    return n;
  };
  return { nMcp: count('n-mcp', 1), nRef: count('n-ref', 1), warmup: count('warmup', 0) };
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

// One call to mcp-exec; returns [client-side ms, server-reported duration_ms].
async function callMcpExec(client, snippet) {
  const started = performance.now();
  const result = await client.callTool({ name: 'exec', arguments: { code: snippet.code } });
  const elapsed = performance.now() - started;
  const out = result.structuredContent;
  if (result.isError || out?.exit_code !== 0) {
    throw new Error(`mcp-exec ${snippet.name} failed: ${JSON.stringify(result)}`);
  }
  checkOutput('mcp-exec', snippet, out.stdout);
  if (snippet.images !== undefined) {
    const images = result.content.filter((c) => c.type === 'image' && c.mimeType === 'image/png');
    if (images.length !== snippet.images) {
      throw new Error(`mcp-exec ${snippet.name}: ${images.length} image items, expected ${snippet.images}`);
    }
  }
  return [elapsed, out.duration_ms];
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
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const format = (cells) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(format(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const l of lines) console.log(format(l));
}

// Lockdown timings from the server's JSON log lines (event "run").
// field: lockdown_us (on the request's path) or lockdown_ahead_us (done by
// a spare runner before its request arrived).
function lockdownStats(log, field = 'lockdown_us') {
  const us = log
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((m) => m.event === 'run' && m[field] >= 0)
    .map((m) => m[field] / 1000)
    .sort((a, b) => a - b);
  if (us.length === 0) throw new Error(`the server logged no ${field} timings`);
  const pick = (q) => us[Math.min(us.length - 1, Math.ceil(q * us.length) - 1)];
  return { n: us.length, p50_ms: pick(0.5), p99_ms: pick(0.99) };
}

async function main() {
  const { nMcp, nRef, warmup } = settings();
  const rows = [];

  const { client, serverLog } = await connectMcpExec({ clientName: 'mcp-exec-bench' });
  const server = client.getServerVersion();
  try {
    for (const snippet of SNIPPETS) {
      const results = await measure(() => callMcpExec(client, snippet), warmup, nMcp);
      rows.push(summarize(snippet.name, 'mcp-exec', results.map((r) => r[0]), results.map((r) => r[1])));
    }
  } catch (err) {
    err.message += `\nserver stderr:\n${serverLog()}`;
    throw err;
  } finally {
    await client.close();
  }
  const lockdown = lockdownStats(serverLog());
  const lockdownAhead = lockdownStats(serverLog(), 'lockdown_ahead_us');

  for (const snippet of SNIPPETS) {
    const samples = await measure(() => callReference(snippet), warmup, nRef);
    rows.push(summarize(snippet.name, 'reference', samples));
  }

  const p50 = (snippet, side) => rows.find((r) => r.snippet === snippet && r.side === side).p50_ms;
  const ratios = Object.fromEntries(
    SNIPPETS.map((s) => [s.name, Math.round((p50(s.name, 'reference') / p50(s.name, 'mcp-exec')) * 10) / 10]),
  );
  rows.sort((a, b) => SNIPPETS.findIndex((s) => s.name === a.snippet) - SNIPPETS.findIndex((s) => s.name === b.snippet));

  console.log(`mcp-exec ${server?.version} (${serverBin}) vs. reference ${REFERENCE_PYTHON} per call`);
  console.log(`warm-up ${warmup} calls, then ${nMcp} (mcp-exec) / ${nRef} (reference) sequential calls per snippet`);
  console.log();
  printTable(rows, ratios);
  console.log();
  // The sandbox's cost per run: the runner times its own lockdown (mount and
  // ipc namespaces, tmpfs, rlimits, credentials, no_new_privs, Landlock,
  // seccomp) and the server logs it: the part a spare runner did before its
  // request arrived, and the part left on the request's path. Namespaces
  // made once in the zygote cost nothing per run.
  const printP50 = p50('print', 'mcp-exec');
  console.log(
    `lockdown per run, ahead of the request (spare runners): p50 ${lockdownAhead.p50_ms.toFixed(3)} ms, ` +
      `p99 ${lockdownAhead.p99_ms.toFixed(3)} ms (CPU spent per run, off the latency path)`,
  );
  console.log(
    `lockdown per run, on the request's path: p50 ${lockdown.p50_ms.toFixed(3)} ms, p99 ${lockdown.p99_ms.toFixed(3)} ms ` +
      `over ${lockdown.n} runs (${((lockdown.p50_ms / printP50) * 100).toFixed(1)}% of a print(1) call; ` +
      `with the whole lockdown on the path print(1) would take about ` +
      `${(printP50 + lockdownAhead.p50_ms).toFixed(2)} ms)`,
  );
  console.log();
  const summary = {
    server: { name: server?.name, version: server?.version, bin: serverBin },
    reference: REFERENCE_PYTHON,
    warmup,
    n: { 'mcp-exec': nMcp, reference: nRef },
    rows,
    ratio_ref_p50_over_mcp_p50: ratios,
    lockdown,
    lockdown_ahead: lockdownAhead,
  };
  console.log(`BENCH_JSON ${JSON.stringify(summary)}`);
}

main().catch((err) => {
  console.error(`bench failed: ${err.stack ?? err}`);
  process.exitCode = 1;
});
