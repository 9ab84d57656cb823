// Soak: many mixed calls, a few in flight at once, through the official MCP
// SDK client over stdio, then what the server has left behind.
//
//   (cd tests/client && npm ci)   # the SDK, pinned once for tests and bench
//   node bench/soak.mjs [--calls=10000] [--in-flight=4] [--seed=1] [--json-out=FILE]
//
// MCP_EXEC_BIN selects the server binary; run it as root (it reads other
// users' /proc entries). The calls are drawn, with a fixed seed, from the
// kinds below: plain prints, pandas, exceptions, output floods past the cap,
// fatal signals, children left running, memory hogs past the limit, disk
// fills past the limit, timeouts, figures, out/ files, calls into four live
// sessions, and calls the client cancels mid-run. Each answer is checked
// against what that kind must give (its own stdout, its reason, its images
// or files); a call whose answer never comes within CALL_TIMEOUT_MS is lost.
//
// It prints one table: answers lost and wrong (both must be 0), the
// supervisor's open fds and RSS, the zygote's RSS, zombies, processes of the
// sandbox uid and run directories, measured after the warm-up and after the
// soak (flat), and again after the server exited (all zero), and the
// throughput. Exits non-zero when an answer was lost or wrong, or something
// was left behind. The last line is the summary as JSON ("SOAK_JSON ").
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { connectMcpExec, serverBin } from '../tests/client/mcp_client.mjs';

const SANDBOX_UID = 65532; // sandbox::RunLimits::sandbox_uid
const CALL_TIMEOUT_MS = 120_000;
const SESSIONS = ['soak-a', 'soak-b', 'soak-c', 'soak-d'];
// The server's limits for the soak, low enough that the hogs hit them fast.
const SERVER_ENV = {
  MCP_EXEC_MEMORY_LIMIT_MB: '256',
  MCP_EXEC_DISK_LIMIT_MB: '64',
  MCP_EXEC_MAX_OUTPUT_BYTES: '65536',
  MCP_EXEC_MAX_QUEUE: '64',
  MCP_EXEC_MAX_PY_SESSIONS: String(SESSIONS.length),
};

const expectStdout = (want) => (r) => (r.stdout === want ? null : `stdout ${JSON.stringify(r.stdout)}, want ${JSON.stringify(want)}`);
const expectReason = (want) => (r) => (r.reason === want ? null : `reason ${JSON.stringify(r.reason)}, want ${JSON.stringify(want)}`);

// Each kind: weight, and make(i, ctx) -> { args, check(structured, content) -> null | why wrong,
// abortAfterMs? (the client cancels the call then) }; ctx: { counts, rand }.
const KINDS = [
  { name: 'print', weight: 34, make: (i) => ({ args: { code: `print(${i})` }, check: expectStdout(`${i}\n`) }) },
  {
    name: 'pandas',
    weight: 8,
    make: (i) => ({
      args: { code: `import pandas as pd\ndf = pd.DataFrame({'k': [1, 2, 1], 'v': [${i}, 2, 3]})\nprint(df.groupby('k').v.sum().to_dict())` },
      check: expectStdout(`{1: ${i + 3}, 2: 2}\n`),
    }),
  },
  {
    name: 'exception',
    weight: 8,
    make: (i) => ({
      args: { code: `raise ValueError('soak ${i}')` },
      check: (r) => (r.exit_code === 1 && r.stderr.includes(`ValueError: soak ${i}`) ? null : `exit ${r.exit_code}, stderr ${JSON.stringify(r.stderr.slice(-200))}`),
    }),
  },
  {
    name: 'flood',
    weight: 4,
    make: () => ({
      args: { code: "import sys\nfor _ in range(64):\n    sys.stdout.write('x' * 65536)" },
      check: (r) => (r.truncated === true && r.exit_code === 0 ? null : `truncated ${r.truncated}, exit ${r.exit_code}`),
    }),
  },
  {
    name: 'fatal_signal',
    weight: 4,
    make: () => ({
      args: { code: "import os, signal\nprint('before', flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)" },
      check: (r) => (r.reason === 'signal' && r.signal === 11 && r.stdout === 'before\n' ? null : `reason ${r.reason}, signal ${r.signal}, stdout ${JSON.stringify(r.stdout)}`),
    }),
  },
  {
    name: 'children_left',
    weight: 4,
    make: (i) => ({
      args: { code: `import subprocess\nsubprocess.Popen(['sleep', '300'])\nsubprocess.Popen(['sh', '-c', 'sleep 300 &'])\nprint('left ${i}')` },
      check: expectStdout(`left ${i}\n`),
    }),
  },
  {
    name: 'memory_hog',
    weight: 3,
    make: () => ({ args: { code: 'x = bytearray(400 * 1024 * 1024)\nprint(len(x))' }, check: expectReason('memory') }),
  },
  {
    name: 'disk_fill',
    weight: 3,
    make: () => ({
      args: { code: "with open('fill.bin', 'wb') as f:\n    for _ in range(128):\n        f.write(b'x' * (1 << 20))" },
      // The run's own disk is its limit too (where it gets a tmpfs of that
      // size): ENOSPC may come first.
      check: (r) =>
        r.reason === 'file_size' || (r.exit_code === 1 && r.stderr.includes('No space left on device'))
          ? null
          : `reason ${JSON.stringify(r.reason)}, exit ${r.exit_code}, stderr ${JSON.stringify(r.stderr.slice(-200))}`,
    }),
  },
  {
    name: 'timeout',
    weight: 1,
    make: () => ({
      args: { code: "import time\nprint('started', flush=True)\ntime.sleep(30)", timeout_s: 1 },
      check: (r) => (r.timed_out === true && r.reason === 'timeout' && r.stdout === 'started\n' ? null : `timed_out ${r.timed_out}, reason ${r.reason}, stdout ${JSON.stringify(r.stdout)}`),
    }),
  },
  {
    name: 'figure',
    weight: 4,
    make: () => ({
      args: { code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()' },
      check: (r, content) => {
        const images = content.filter((c) => c.type === 'image' && c.mimeType === 'image/png' && c.data.length > 1000);
        return r.images === 1 && images.length === 1 ? null : `images ${r.images}, image items ${images.length}`;
      },
    }),
  },
  {
    name: 'out_file',
    weight: 4,
    make: (i) => ({
      args: { code: `import os\nos.makedirs('out', exist_ok=True)\nopen('out/r.csv', 'w').write('a,b\\n${i},2\\n')` },
      check: (r, content) => {
        const item = content.find((c) => c.type === 'resource' && c.resource?.uri === 'file:///out/r.csv');
        return item?.resource.text === `a,b\n${i},2\n` ? null : `files ${JSON.stringify(r.files)}, resource ${JSON.stringify(item)}`;
      },
    }),
  },
  { name: 'session', weight: 15, make: (i, { counts, rand }) => sessionCall(counts, rand) },
  {
    name: 'cancelled',
    weight: 3,
    make: (i, { rand }) => ({
      args: { code: "import time\nprint('started', flush=True)\ntime.sleep(20)" },
      check: () => null,
      abortAfterMs: 50 + Math.floor(rand() * 250),
    }),
  },
  {
    name: 'stdin_files',
    weight: 5,
    make: (i) => ({
      args: { code: "import sys\nprint(sys.stdin.read() + open('in/a.txt').read())", stdin: `s${i}`, files: { 'in/a.txt': `f${i}` } },
      check: expectStdout(`s${i}f${i}\n`),
    }),
  },
];

// A small deterministic generator (mulberry32).
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick(rand) {
  const total = KINDS.reduce((s, k) => s + k.weight, 0);
  let x = rand() * total;
  for (const k of KINDS) {
    if ((x -= k.weight) < 0) return k;
  }
  return KINDS[0];
}

// Each session counts its own cells; calls into one session run in the
// order they were sent (one connection), so the count each must print is
// known when it is sent. A session that ended meanwhile (session_new) starts
// at 1 again.
function sessionCall(counts, rand) {
  const name = SESSIONS[Math.floor(rand() * SESSIONS.length)];
  const n = (counts.get(name) ?? 0) + 1;
  counts.set(name, n);
  return {
    args: { code: "n = globals().get('n', 0) + 1\nprint(n)", session: name },
    check: (r) => {
      if (r.session_new) counts.set(name, counts.get(name) - n + 1);
      const want = r.session_new ? 1 : n;
      return r.stdout === `${want}\n` || r.session_new ? null : `session ${name}: stdout ${JSON.stringify(r.stdout)}, want ${want}`;
    },
  };
}

// ---------------------------------------------------------------------------
// What the server holds, from /proc.

function readOr(file, fallback) {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
}

function processes() {
  const out = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readOr(`/proc/${entry}/stat`, null);
    const status = readOr(`/proc/${entry}/status`, null);
    if (stat === null || status === null) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
    const cmdline = readOr(`/proc/${entry}/cmdline`, '');
    out.push({ pid: Number(entry), state: fields[0], ppid: Number(fields[1]), uid, cmdline });
  }
  return out;
}

function descendants(table, pid) {
  const out = [];
  for (let todo = [pid]; todo.length; ) {
    const p = todo.pop();
    for (const c of table.filter((x) => x.ppid === p)) {
      out.push(c);
      todo.push(c.pid);
    }
  }
  return out;
}

const rssKiB = (pid) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readOr(`/proc/${pid}/status`, ''))?.[1] ?? 0);
const fdCount = (pid) => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
};

function zygoteOf(table, serverPid) {
  for (const p of table.filter((x) => x.ppid === serverPid)) {
    if (readOr(`/proc/${p.pid}/cmdline`, '').split('\0').includes('__zygote')) return p.pid;
  }
  return null;
}

// The server's run directories: run-* under its base dir(s) in the workdir root.
function runDirs(root) {
  let n = 0;
  for (const base of readdirSync(root)) {
    if (!base.startsWith('mcp-exec-') || base.startsWith('mcp-exec-cache-')) continue;
    try {
      n += readdirSync(path.join(root, base)).filter((e) => e.startsWith('run-')).length;
    } catch {
      // removed meanwhile
    }
  }
  return n;
}

// Sandbox-uid processes anywhere on the machine, except the given pids.
function sandboxProcesses(table, except = new Set()) {
  return table.filter((p) => p.uid === SANDBOX_UID && !except.has(p.pid)).length;
}

// What the children_left calls start (`sleep 300`, some orphaned on
// purpose): each must die with its run. Nothing else here runs it.
const LEFT_BEHIND = 'sleep\0' + '300\0';
const childrenLeft = (table) => table.filter((p) => p.uid === SANDBOX_UID && p.cmdline === LEFT_BEHIND).length;

function snapshot(serverPid, root) {
  const table = processes();
  const zygote = zygoteOf(table, serverPid);
  const tree = [...descendants(table, serverPid)];
  // Between calls the zygote's subtree holds its spares and the live
  // sessions' interpreters; what is counted as left behind is every other
  // sandbox-uid process, and each zombie.
  const kept = new Set();
  if (zygote !== null) {
    for (const top of table.filter((x) => x.ppid === zygote)) {
      kept.add(top.pid);
      for (const d of descendants(table, top.pid)) {
        // a spare's or a session's own processes: its init and interpreter
        if (d.ppid === top.pid) kept.add(d.pid);
      }
    }
  }
  return {
    supervisor_fds: fdCount(serverPid),
    supervisor_rss_kib: rssKiB(serverPid),
    zygote_rss_kib: zygote === null ? 0 : rssKiB(zygote),
    zombies: tree.filter((p) => p.state === 'Z').length,
    sandbox_processes: sandboxProcesses(table, kept),
    children_left: childrenLeft(table),
    run_dirs: runDirs(root),
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------

async function callOne(client, i, made) {
  const options = { timeout: CALL_TIMEOUT_MS };
  let abort;
  const { abortAfterMs } = made;
  if (abortAfterMs !== undefined) {
    abort = new AbortController();
    options.signal = abort.signal;
    setTimeout(() => abort.abort('soak cancels'), abortAfterMs);
  }
  try {
    const res = await client.callTool({ name: 'exec', arguments: made.args }, undefined, options);
    if (abort) return { outcome: 'wrong', why: `cancelled call ${i} was answered: ${JSON.stringify(res.structuredContent)?.slice(0, 200)}` };
    if (res.isError) return { outcome: 'wrong', why: `tool error: ${res.content?.[0]?.text}` };
    const why = made.check(res.structuredContent, res.content);
    return why === null ? { outcome: 'ok' } : { outcome: 'wrong', why };
  } catch (err) {
    if (abort && abort.signal.aborted && !/timed out/i.test(String(err))) return { outcome: 'ok' };
    if (/timed out/i.test(String(err))) return { outcome: 'lost', why: String(err) };
    return { outcome: 'wrong', why: String(err) };
  }
}

async function soak(client, { calls, inFlight, seed }, counts) {
  const rand = random(seed);
  const perKind = new Map(KINDS.map((k) => [k.name, { calls: 0, ok: 0, wrong: 0, lost: 0 }]));
  const problems = [];
  let next = 0;
  const worker = async () => {
    while (next < calls) {
      const i = next++;
      const kind = pick(rand);
      const r = await callOne(client, i, kind.make(i, { counts, rand }));
      const row = perKind.get(kind.name);
      row.calls++;
      row[r.outcome]++;
      if (r.outcome !== 'ok' && problems.length < 20) problems.push(`call ${i} (${kind.name}): ${r.outcome}: ${r.why}`);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const seconds = (performance.now() - t0) / 1000;
  return { perKind, problems, seconds };
}

function printTable(title, header, rows) {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells) => cells.map((x, c) => (c === 0 ? String(x).padEnd(widths[c]) : String(x).padStart(widths[c]))).join('  ');
  console.log(`\n${title}`);
  console.log(line(header));
  for (const r of rows) console.log(line(r));
}

async function main() {
  const { values } = parseArgs({
    options: {
      calls: { type: 'string', default: '10000' },
      'in-flight': { type: 'string', default: '4' },
      seed: { type: 'string', default: '1' },
      'json-out': { type: 'string' },
    },
  });
  const opts = { calls: Number(values.calls), inFlight: Number(values['in-flight']), seed: Number(values.seed) };
  if (!(opts.calls > 0 && opts.inFlight > 0)) throw new Error('--calls and --in-flight must be positive numbers');
  if (process.getuid?.() !== 0) console.log('note: not root, so other users\' /proc entries may be unreadable');
  const root = await mkdtemp(path.join(os.tmpdir(), 'mcp-exec-soak-'));
  const { client, transport, serverLog } = await connectMcpExec({
    clientName: 'mcp-exec-soak',
    env: { ...SERVER_ENV, MCP_EXEC_WORKDIR_ROOT: root },
  });
  const serverPid = transport.pid;
  console.log(`soak: ${serverBin}, pid ${serverPid}, ${opts.calls} calls, ${opts.inFlight} in flight, seed ${opts.seed}, ${os.cpus().length} CPUs, workdir root ${root}`);

  // Warm-up: every kind once, the sessions started, then the baseline.
  const counts = new Map(); // cells per session, across the warm-up and the soak
  const warm = await soak(client, { calls: 60, inFlight: opts.inFlight, seed: opts.seed + 1000 }, counts);
  for (const s of SESSIONS) await client.callTool({ name: 'exec', arguments: { code: 'pass', session: s } });
  await sleep(1500);
  const before = snapshot(serverPid, root);
  const run = await soak(client, opts, counts);
  await sleep(1500); // the last runs' teardown
  const after = snapshot(serverPid, root);
  await client.close();
  // The server exits on EOF; then nothing of it may remain.
  for (let t = 0; t < 100 && processes().some((p) => p.pid === serverPid); t++) await sleep(100);
  await sleep(500);
  const table = processes();
  const exited = {
    server_running: table.some((p) => p.pid === serverPid && p.state !== 'Z'),
    sandbox_processes: sandboxProcesses(table),
    children_left: childrenLeft(table),
    run_dirs: runDirs(root),
  };

  const rows = [...run.perKind].map(([name, r]) => [name, r.calls, r.ok, r.wrong, r.lost]);
  const total = rows.reduce((s, r) => [s[0], s[1] + r[1], s[2] + r[2], s[3] + r[3], s[4] + r[4]], ['total', 0, 0, 0, 0]);
  printTable('calls by kind', ['kind', 'calls', 'ok', 'wrong', 'lost'], [...rows, total]);
  const keys = Object.keys(before);
  printTable(
    'resources (after the warm-up / after the soak / after the server exited)',
    ['resource', 'before', 'after', 'exited'],
    keys.map((k) => [k, before[k], after[k], k in exited ? exited[k] : '-']),
  );
  const throughput = total[1] / run.seconds;
  console.log(`\nthroughput: ${total[1]} calls in ${run.seconds.toFixed(1)} s = ${throughput.toFixed(1)} calls/s (${opts.inFlight} in flight)`);
  for (const p of [...warm.problems.map((p) => `warm-up ${p}`), ...run.problems]) console.log(`problem: ${p}`);

  const failures = [];
  if (total[3] + total[4] > 0) failures.push(`${total[4]} answers lost, ${total[3]} wrong`);
  if (warm.problems.length) failures.push(`${warm.problems.length} problems in the warm-up`);
  if (after.supervisor_fds !== before.supervisor_fds) failures.push(`supervisor fds ${before.supervisor_fds} -> ${after.supervisor_fds}`);
  // Between calls, the live sessions' run directories are the only ones.
  if (after.zombies || after.sandbox_processes || after.children_left || after.run_dirs > before.run_dirs) {
    failures.push('zombies, sandbox processes or run directories left after the soak');
  }
  if (exited.server_running || exited.sandbox_processes || exited.children_left || exited.run_dirs) failures.push('something left after the server exited');
  // RSS: flat means within 10% (allocators keep what they had at the peak).
  if (after.supervisor_rss_kib > before.supervisor_rss_kib * 1.1) failures.push('supervisor RSS grew by more than 10%');
  if (after.zygote_rss_kib > before.zygote_rss_kib * 1.1) failures.push('zygote RSS grew by more than 10%');
  const summary = { ...opts, seconds: run.seconds, throughput, kinds: Object.fromEntries(run.perKind), before, after, exited, failures };
  if (values['json-out']) await writeFile(values['json-out'], JSON.stringify(summary, null, 2));
  await rm(root, { recursive: true, force: true });
  console.log(failures.length ? `\nSOAK FAILED: ${failures.join('; ')}` : '\nsoak: nothing lost, nothing wrong, nothing left behind');
  console.log(`SOAK_JSON ${JSON.stringify(summary)}`);
  if (failures.length) {
    console.error(`server stderr (tail):\n${serverLog().slice(-3000)}`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
