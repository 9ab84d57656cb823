// The one-shot call's goals as one table (docs/benchmark.md): each figure of
// one or two server binaries measured in the same run, rounds alternating, so
// that this VM's drift (its page tables make fork and copy-on-write faults
// several times dearer than bare metal, and the cost moves from day to day)
// cancels in the ratios.
//
//   (cd tests/client && npm ci)
//   node bench/goals.mjs [--base=OLD_BIN] [--bin=NEW_BIN] [--rounds=2] [--n=30]
//                        [--spaced-ms=300] [--conc-calls=150] [--quick] [--json-out=FILE]
//
// For each binary and round:
// - S: print(1) into a live session, p50 of n calls back to back.
// - O spaced: one-shot print(1) with spaced-ms of idle before each call (an
//   agent's loop), p50; O back to back: the same without the idle.
// - F: the fork floor, bench/fork_floor.c (built here with cc): a process as
//   large as this server's zygote (its RSS) forks, the child exits at once,
//   the parent reaps it; p50. (O - S) / F is the interactive goal (<= 1).
// - The phase trace of the spaced one-shot calls (the run log line's
//   "trace_us", where the binary writes one): p50 of each phase's end, from
//   the call's arrival, and the runner's minor faults.
// - CPU per one-shot call: the zygote's and its descendants' user and system
//   time (reaped ones included, from /proc/<pid>/stat) over the back-to-back
//   calls, per call, and over the calls 4 in flight (more of them: the
//   steadier figure); the server's own beside it.
// - calls/s with 4 calls in flight on one connection, over stdio and over
//   streamable HTTP (127.0.0.1).
// - pandas: a small groupby one-shot, p50, against a fresh /usr/bin/python3
//   per call (the Go server's design) in a fresh folder.
// - memory: PSS of the zygote and its spares, idle.
// The last line is the summary as JSON, prefixed with "GOALS_JSON ".
// --quick: tiny counts, one binary, one round: proves the bench works (CI).
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { connectHttpClient, connectMcpExec, serverBin, startHttpServer } from '../tests/client/mcp_client.mjs';
import { descendantsOf, findZygote, processTable, pssKiB } from './procfs.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
const PRINT = { code: 'print(1)\n', expect: '1\n' };
const PANDAS = {
  code: "import pandas as pd\ndf = pd.DataFrame({'k': [1, 2, 1], 'v': [1, 2, 3]})\nprint(df.groupby('k').v.sum().to_dict())\n",
  expect: '{1: 4, 2: 2}\n',
};
const PHASES = ['handed', 'code_started', 'code_finished', 'status_known', 'drained', 'answered', 'torn_down'];
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function settings() {
  const { values } = parseArgs({
    options: {
      base: { type: 'string' },
      bin: { type: 'string', default: serverBin },
      rounds: { type: 'string' },
      n: { type: 'string' },
      'spaced-ms': { type: 'string', default: '300' },
      'conc-calls': { type: 'string' },
      quick: { type: 'boolean', default: false },
      'json-out': { type: 'string' },
    },
  });
  const int = (name, fallback, min) => {
    const v = values[name] === undefined ? fallback : Number(values[name]);
    if (!Number.isInteger(v) || v < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return v;
  };
  const quick = values.quick;
  const bins = values.base ? [['base', values.base], ['new', values.bin]] : [['new', values.bin]];
  return {
    bins,
    rounds: int('rounds', quick ? 1 : 2, 1),
    n: int('n', quick ? 4 : 30, 2),
    spacedMs: int('spaced-ms', 300, 0),
    concCalls: int('conc-calls', quick ? 12 : 150, 4),
    jsonOut: values['json-out'],
    quick,
  };
}

// The median (of an even count, the mean of the middle two).
function p50(samples) {
  const s = samples.filter((x) => typeof x === 'number').sort((a, b) => a - b);
  if (!s.length) return null;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

async function call(client, snippet, session) {
  const args = { code: snippet.code };
  if (session) args.session = session;
  const t0 = performance.now();
  const result = await client.callTool({ name: 'exec', arguments: args });
  const ms = performance.now() - t0;
  const out = result.structuredContent;
  if (result.isError || out?.exit_code !== 0 || out.stdout !== snippet.expect) {
    throw new Error(`the call failed or printed something else: ${JSON.stringify(result).slice(0, 2000)}`);
  }
  return ms;
}

// utime, stime, cutime, cstime of a process, in ms; null once it has ended.
function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * TICK_MS;
  } catch {
    return null;
  }
}

// The zygote's side: the zygote, the runs and spares alive now, and every
// one reaped (in the zygote's cutime, or a live init's).
function zygoteCpuMs(zygote) {
  let total = cpuMs(zygote) ?? 0;
  for (const pid of descendantsOf(processTable(), zygote)) total += cpuMs(pid) ?? 0;
  return total;
}

function forkFloor(binary, zygote) {
  const rss = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${zygote}/status`, 'utf8'))[1]);
  const mib = Math.max(1, Math.round(rss / 1024));
  const out = execFileSync(binary, [String(mib), '40']).toString();
  return { mib, ...JSON.parse(out) };
}

// The phase trace of the run log lines written since `from` (an offset in
// the server's log), p50 of each phase, in ms from the call's arrival.
function phaseTrace(log, from) {
  const runs = [];
  for (const line of log.slice(from).split('\n')) {
    if (!line.startsWith('{"') || !line.includes('"event":"run"')) continue;
    const m = JSON.parse(line);
    if (m.trace_us) runs.push(m);
  }
  if (!runs.length) return null;
  const trace = {};
  for (const phase of PHASES) trace[phase] = p50(runs.map((r) => r.trace_us[phase])) / 1000;
  trace.faults_before_code = p50(runs.map((r) => r.minor_faults?.before_code));
  trace.faults_during_code = p50(runs.map((r) => r.minor_faults?.during_code));
  return trace;
}

async function closedLoop(client, k, calls) {
  let sent = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (sent < calls) {
      sent++;
      await call(client, PRINT);
    }
  };
  await Promise.all(Array.from({ length: k }, worker));
  return (calls / (performance.now() - t0)) * 1000;
}

const SERVER_ENV = { MCP_EXEC_MAX_CONCURRENT: undefined, MCP_EXEC_MAX_QUEUE: '64', MCP_EXEC_LOG_LEVEL: 'info' };

async function measureStdio(bin, opts, floorBinary) {
  const { client, transport, serverLog } = await connectMcpExec({
    command: bin,
    clientName: 'mcp-exec-bench-goals',
    env: SERVER_ENV,
  });
  try {
    const serverPid = transport.pid;
    for (let i = 0; i < 5; i++) await call(client, PRINT);
    const zygote = findZygote(serverPid).pid;
    const r = {};
    await call(client, PRINT, 'goals');
    const s = [];
    for (let i = 0; i < opts.n; i++) s.push(await call(client, PRINT, 'goals'));
    r.S = p50(s);
    await client.callTool({ name: 'exec', arguments: { code: 'pass', session: 'goals', end: true } }).catch(() => {});
    await delay(opts.spacedMs);
    const from = serverLog().length;
    const spaced = [];
    for (let i = 0; i < opts.n; i++) {
      await delay(opts.spacedMs);
      spaced.push(await call(client, PRINT));
    }
    r.O_spaced = p50(spaced);
    r.trace = phaseTrace(serverLog(), from);
    await delay(opts.spacedMs);
    const cpu0 = zygoteCpuMs(zygote);
    const own0 = cpuMs(serverPid);
    const b2b = [];
    for (let i = 0; i < opts.n; i++) b2b.push(await call(client, PRINT));
    await delay(opts.spacedMs);  // the last run reaped, its spare made
    r.O_b2b = p50(b2b);
    r.cpu_per_call_ms = (zygoteCpuMs(zygote) - cpu0) / opts.n;
    r.server_cpu_per_call_ms = (cpuMs(serverPid) - own0) / opts.n;
    const cpu1 = zygoteCpuMs(zygote);
    r.calls_per_s_stdio = await closedLoop(client, 4, opts.concCalls);
    await delay(opts.spacedMs);
    r.cpu_per_call_in_flight_ms = (zygoteCpuMs(zygote) - cpu1) / opts.concCalls;
    const pandas = [];
    for (let i = 0; i < Math.ceil(opts.n / 2); i++) {
      await delay(opts.spacedMs);
      pandas.push(await call(client, PANDAS));
    }
    r.pandas = p50(pandas);
    await delay(1000);
    r.zygote_pss_mib = pssKiB(zygote) / 1024;
    r.spares_pss_mib = descendantsOf(processTable(), zygote).reduce((a, pid) => a + pssKiB(pid), 0) / 1024;
    r.F = forkFloor(floorBinary, zygote);
    r.oneshot_over_floor = (r.O_spaced - r.S) / (r.F.p50_us / 1000);
    return r;
  } catch (err) {
    err.message += `\nserver stderr:\n${serverLog().slice(-4000)}`;
    throw err;
  } finally {
    await client.close();
  }
}

async function measureHttp(bin, opts) {
  const server = await startHttpServer({ env: SERVER_ENV, bin });
  try {
    const { client } = await connectHttpClient(server, { clientName: 'mcp-exec-bench-goals' });
    try {
      for (let i = 0; i < 8; i++) await call(client, PRINT);
      return await closedLoop(client, 4, opts.concCalls);
    } finally {
      await client.close();
    }
  } finally {
    await server.stop();
  }
}

function runProcess(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

// The Go server's design: a fresh folder, the code as a file, a fresh python3.
async function referencePandas(n) {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-goals-'));
    try {
      await writeFile(path.join(dir, 'main.py'), PANDAS.code);
      const run = await runProcess('/usr/bin/python3', ['main.py'], { cwd: dir });
      if (run.code !== 0 || run.stdout !== PANDAS.expect) throw new Error('the reference pandas call failed');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    samples.push(performance.now() - t0);
  }
  return p50(samples);
}

function buildFloor() {
  const out = path.join(os.tmpdir(), `mcp-exec-fork-floor-${process.pid}`);
  execFileSync('cc', ['-O2', '-o', out, path.join(here, 'fork_floor.c')]);
  return out;
}

const fmt = (v, digits = 1) => (v === null || v === undefined ? '-' : Number(v).toFixed(digits));

function median(rows, pick) {
  return p50(rows.map(pick).filter((v) => v !== null && v !== undefined));
}

function printTable(summary) {
  const names = Object.keys(summary.binaries);
  const lines = [
    ['S: session print(1) p50, ms', (r) => r.S],
    ['O: one-shot print(1), spaced, p50, ms', (r) => r.O_spaced],
    ['O: one-shot print(1), back to back, p50, ms', (r) => r.O_b2b],
    ['F: fork floor p50, ms', (r) => r.F.p50_us / 1000],
    ['(O - S) / F  (goal <= 1)', (r) => r.oneshot_over_floor, 2],
    ['calls/s, 4 in flight, stdio', (r) => r.calls_per_s_stdio],
    ['calls/s, 4 in flight, HTTP', (r) => r.calls_per_s_http],
    ['CPU per one-shot call (zygote side), ms', (r) => r.cpu_per_call_ms],
    ['  the same, 4 in flight over stdio, ms', (r) => r.cpu_per_call_in_flight_ms],
    ['CPU per one-shot call (server), ms', (r) => r.server_cpu_per_call_ms],
    ['pandas one-shot p50, ms', (r) => r.pandas],
    ['pandas: fresh python3 / one-shot', (r) => summary.reference_pandas_ms / r.pandas],
    ['zygote PSS, MiB', (r) => r.zygote_pss_mib],
    ['spares PSS, MiB', (r) => r.spares_pss_mib],
  ];
  for (const phase of PHASES) lines.push([`  trace: ${phase}, ms from arrival`, (r) => r.trace?.[phase], 2]);
  lines.push(["  trace: runner minor faults before its code", (r) => r.trace?.faults_before_code, 0]);
  lines.push(["  trace: runner minor faults during its code", (r) => r.trace?.faults_during_code, 0]);
  const header = ['figure (median of rounds)', ...names, ...(names.length === 2 ? ['new / base'] : [])];
  const rows = lines.map(([label, pick, digits]) => {
    const values = names.map((name) => median(summary.binaries[name], pick));
    const cells = values.map((v) => fmt(v, digits));
    if (names.length === 2) cells.push(values[0] ? fmt(values[1] / values[0], 2) : '-');
    return [label, ...cells];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const show = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(show(header));
  for (const r of rows) console.log(show(r));
  console.log(`reference: fresh python3 per pandas call, p50 ${fmt(summary.reference_pandas_ms)} ms`);
}

async function main() {
  const opts = settings();
  const floorBinary = buildFloor();
  const summary = { binaries: {}, reference_pandas_ms: null, settings: { ...opts, bins: undefined } };
  try {
    for (let round = 0; round < opts.rounds; round++) {
      // Alternating: the binary measured first in one round goes last in the next.
      const order = round % 2 === 0 ? opts.bins : [...opts.bins].reverse();
      for (const [name, bin] of order) {
        const r = await measureStdio(bin, opts, floorBinary);
        r.calls_per_s_http = await measureHttp(bin, opts);
        (summary.binaries[name] ??= []).push(r);
        console.error(`round ${round + 1}, ${name}: (O - S) / F ${fmt(r.oneshot_over_floor, 2)}`);
      }
    }
    summary.reference_pandas_ms = await referencePandas(opts.quick ? 2 : 8);
  } finally {
    await rm(floorBinary, { force: true });
  }
  if (opts.quick) console.log('--quick: tiny counts, one round: the figures are rough, not a measure');
  printTable(summary);
  if (opts.jsonOut) writeFileSync(opts.jsonOut, JSON.stringify(summary, null, 1));
  console.log(`GOALS_JSON ${JSON.stringify(summary)}`);
}

main().catch((err) => {
  console.error(err.stack ?? String(err));
  process.exit(1);
});
