// The images side by side: each run by podman in the README's posture
// (--memory 256m --cpus 1 ...), driven over stdio by the official SDK
// client, in one run and in alternating rounds, so that the machine's noise
// falls on both alike. scripts/check-image --bench builds the images and
// runs this; by hand:
//
//   node bench/image.mjs [--rounds=2] [--n=30] NAME=IMAGE [NAME=IMAGE...]
//     e.g. bookworm=localhost/mcp-exec-test:bookworm trixie=localhost/mcp-exec-test:trixie
//
// Per image and round: p50 and p99 of print(1), the bench's pandas snippet,
// the six imports, and print(1) into a live session; calls/s with 4 in
// flight; the PSS of the zygote and of the whole server (read from the
// host's /proc as root: the container's processes are the host's). The
// first image is the baseline of the ratios. MCP_EXEC_PODMAN_ARGS: the
// harness's own podman flags (scripts/check-image sets them).
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';

import { connectMcpExec } from '../tests/client/mcp_client.mjs';
import { POSTURE_ARGS } from '../tests/image/posture.mjs';
import { descendantsOf, findZygote, processTable, pssKiB } from './procfs.mjs';

const { values, positionals } = parseArgs({
  options: { rounds: { type: 'string', default: '2' }, n: { type: 'string', default: '30' } },
  allowPositionals: true,
});
const ROUNDS = Number(values.rounds);
const N = Number(values.n);
const IMAGES = positionals.map((p) => {
  const at = p.indexOf('=');
  if (at <= 0) throw new Error(`an image is NAME=IMAGE, not ${p}`);
  return { name: p.slice(0, at), image: p.slice(at + 1) };
});
if (!IMAGES.length) throw new Error('usage: node bench/image.mjs NAME=IMAGE [NAME=IMAGE...]');

const SNIPPETS = [
  { name: 'print(1)', code: 'print(1)\n', expect: '1\n' },
  {
    name: 'pandas',
    code: "import pandas as pd\ndf = pd.DataFrame({'k': [1, 2, 1], 'v': [1, 2, 3]})\nprint(df.groupby('k').v.sum().to_dict())",
    expect: '{1: 4, 2: 2}\n',
  },
  {
    name: 'imports',
    code: 'import numpy, pandas, matplotlib.pyplot, PIL.Image, yaml, jinja2\nprint("ok")\n',
    expect: 'ok\n',
  },
  { name: 'session print(1)', code: 'print(1)\n', expect: '1\n', session: 'bench' },
];

async function timed(client, snippet) {
  const args = { code: snippet.code };
  if (snippet.session) args.session = snippet.session;
  const t = process.hrtime.bigint();
  const res = await client.callTool({ name: 'exec', arguments: args });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (res.isError || res.structuredContent?.stdout !== snippet.expect) {
    throw new Error(`${snippet.name}: unexpected answer ${JSON.stringify(res).slice(0, 400)}`);
  }
  return ms;
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

// The server (the container's PID 1, as the host sees it), its zygote, and
// the PSS of both and of every process below the server.
function memory(containerName) {
  const pid = Number(spawnSync('podman', ['inspect', '--format', '{{.State.Pid}}', containerName], { encoding: 'utf8' }).stdout);
  const tree = [pid, ...descendantsOf(processTable(), pid)];
  return {
    zygoteMiB: pssKiB(findZygote(pid).pid) / 1024,
    totalMiB: tree.reduce((a, p) => a + pssKiB(p), 0) / 1024,
  };
}

async function measure({ name, image }, round) {
  const container = `mcp-exec-bench-${process.pid}-${name}-${round}`;
  const args = ['run', '--rm', '-i', '--name', container, ...POSTURE_ARGS, image];
  const t0 = Date.now();
  const { client } = await connectMcpExec({ command: 'podman', args, timeoutMs: 120_000 });
  const startMs = Date.now() - t0;
  const row = { name, round, startMs };
  try {
    for (const s of SNIPPETS) {
      for (let i = 0; i < 3; i++) await timed(client, s); // warm-up (the session starts here)
      const xs = [];
      for (let i = 0; i < N; i++) xs.push(await timed(client, s));
      row[s.name] = { p50: pct(xs, 50), p99: pct(xs, 99) };
    }
    const calls = N * 4;
    let next = 0;
    const t = Date.now();
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next++ < calls) await timed(client, SNIPPETS[0]);
      }),
    );
    row.callsPerS = calls / ((Date.now() - t) / 1000);
    await new Promise((r) => setTimeout(r, 500)); // the spares settle
    Object.assign(row, memory(container));
  } finally {
    await client.close();
    spawnSync('podman', ['rm', '-f', '--ignore', container]);
  }
  return row;
}

const rows = [];
for (let round = 1; round <= ROUNDS; round++) {
  for (const img of IMAGES) {
    const row = await measure(img, round);
    rows.push(row);
    console.log(`measured ${img.name} round ${round}: print(1) p50 ${row['print(1)'].p50.toFixed(1)} ms`);
  }
}

// One line per image: each figure as round1/round2, and the ratio of its
// median to the baseline's (the first image).
const cols = [...SNIPPETS.map((s) => s.name), 'callsPerS', 'zygoteMiB', 'totalMiB', 'startMs'];
const value = (r, c) => (typeof r[c] === 'object' ? r[c].p50 : r[c]);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const base = Object.fromEntries(cols.map((c) => [c, median(rows.filter((r) => r.name === IMAGES[0].name).map((r) => value(r, c)))]));
console.log(`\nImages in the README's posture (--memory 256m --cpus 1), SDK client over stdio, ${ROUNDS} rounds of ${N} calls:`);
console.log('| figure | ' + IMAGES.map((i) => i.name).join(' | ') + ' | ratio |');
console.log('|---|' + IMAGES.map(() => '---|').join('') + '---|');
const label = {
  callsPerS: 'calls/s, 4 in flight',
  zygoteMiB: 'zygote PSS, MiB',
  totalMiB: 'server PSS (all processes), MiB',
  startMs: 'start to initialized, ms',
};
for (const c of cols) {
  const cells = IMAGES.map((img) => {
    const mine = rows.filter((r) => r.name === img.name);
    if (typeof mine[0][c] === 'object') {
      return mine.map((r) => `${r[c].p50.toFixed(1)}`).join('/') + ' (p99 ' + mine.map((r) => r[c].p99.toFixed(1)).join('/') + ')';
    }
    return mine.map((r) => r[c].toFixed(c === 'startMs' ? 0 : 1)).join('/');
  });
  const last = IMAGES[IMAGES.length - 1].name;
  const ratio = median(rows.filter((r) => r.name === last).map((r) => value(r, c))) / base[c];
  console.log(`| ${label[c] ?? c + ' p50, ms'} | ${cells.join(' | ')} | ${ratio.toFixed(2)} |`);
}
console.log('BENCH_JSON ' + JSON.stringify(rows));
