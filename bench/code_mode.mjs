// Code mode's hop (issue 23): the latency of a nested tool call made from a
// run through mcp-exec (`mcp_tools.everything.echo(...)` in a loop of 100,
// timed inside the run), next to the same 100 echo calls made by the
// official SDK client straight to the same upstream, in the same run of
// this script: server-everything over stdio, and over streamable HTTP on
// 127.0.0.1. Then the fan-out: 50 calls to a tool that waits 100 ms
// (tests/upstreams/tls_upstream.py over https on 127.0.0.1, a throwaway
// CA), made one by one, awaited together, and from 8 threads, against the
// ideal 50 / MCP_EXEC_MAX_TOOL_CALLS_IN_FLIGHT (8) x 100 ms. Printed,
// never asserted; --quick (the bench_code_mode test) takes fewer rounds and
// fails only on a wrong answer.
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import fs from 'node:fs';
import os from 'node:os';

import {
  Client,
  connectMcpExec,
  freePort,
  StdioClientTransport,
  StreamableHTTPClientTransport,
} from '../tests/client/mcp_client.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const upstreams = path.resolve(here, '../tests/upstreams');
const everything = path.join(upstreams, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 2 : 7;
const CALLS = 100;

function p50(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function direct(transport) {
  const client = new Client({ name: 'bench-direct', version: '0.0.0' });
  await client.connect(transport);
  const samples = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < CALLS; i++) {
      const t0 = performance.now();
      const res = await client.callTool({ name: 'echo', arguments: { message: `m${i}` } });
      const ms = performance.now() - t0;
      if (res.content?.[0]?.text !== `Echo: m${i}`) throw new Error(`direct echo: ${JSON.stringify(res)}`);
      if (r > 0) samples.push(ms);  // the first round warms up
    }
  }
  await client.close();
  return p50(samples);
}

const LOOP = `
import json, time, mcp_tools
ms = []
for i in range(${CALLS}):
    t0 = time.perf_counter()
    out = mcp_tools.everything.echo(message=f"m{i}")
    ms.append((time.perf_counter() - t0) * 1000)
    assert out == f"Echo: m{i}", out
print(json.dumps(ms))
`;

async function throughMcpExec(entry) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-code-mode-'));
  const file = path.join(dir, 'upstreams.json');
  fs.writeFileSync(file, JSON.stringify({ mcpServers: { everything: { ...entry, allow: ['echo'] } } }));
  const { client } = await connectMcpExec({ env: { MCP_EXEC_UPSTREAMS: file } });
  const samples = [];
  let wholeCall = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      const res = await client.callTool({ name: 'exec', arguments: { code: LOOP, timeout_s: 60 } });
      const elapsed = performance.now() - t0;
      const out = res.structuredContent;
      if (res.isError || out?.exit_code !== 0 || out?.tool_calls !== CALLS) {
        throw new Error(`through mcp-exec: ${JSON.stringify(res).slice(0, 2000)}`);
      }
      if (r > 0) {
        samples.push(...JSON.parse(out.stdout));
        wholeCall.push(elapsed);
      }
    }
  } finally {
    await client.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return { p50: p50(samples), call: p50(wholeCall) };
}

async function startHttpUpstream() {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', path.join(upstreams, 'loopback.mjs'), everything, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise((resolve, reject) => {
    let log = '';
    child.stderr.on('data', (d) => {
      log += d;
      if (log.includes('listening')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`server-everything exited ${code}: ${log}`)));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => child.kill('SIGTERM') };
}

const fmt = (x) => x.toFixed(2);
const rows = [];

const stdioEntry = { command: process.execPath, args: [everything, 'stdio'] };
const d1 = await direct(new StdioClientTransport({ command: process.execPath, args: [everything, 'stdio'], stderr: 'ignore' }));
const m1 = await throughMcpExec(stdioEntry);
rows.push(['stdio', d1, m1]);

const http = await startHttpUpstream();
try {
  const d2 = await direct(new StreamableHTTPClientTransport(new URL(http.url)));
  const m2 = await throughMcpExec({ url: http.url });
  rows.push(['streamable HTTP (127.0.0.1)', d2, m2]);
} finally {
  http.stop();
}

console.log(`nested echo calls, per call p50 in ms (${CALLS} calls x ${ROUNDS - 1} rounds, after one warm-up round)`);
console.log('| upstream | SDK client direct | from a run via mcp-exec | hop overhead | ratio | whole exec call of 100 |');
console.log('|---|---|---|---|---|---|');
for (const [name, d, m] of rows) {
  console.log(`| ${name} | ${fmt(d)} | ${fmt(m.p50)} | ${fmt(m.p50 - d)} | ${(m.p50 / d).toFixed(2)}x | ${fmt(m.call)} |`);
}

// The fan-out, over https.
const FANOUT = 50;
const WAIT_MS = 100;
const IN_FLIGHT = 8;
const FORMS = {
  'one by one': `import mcp_tools, time
t0 = time.perf_counter()
got = [mcp_tools.tls.wait(ms=${WAIT_MS}) for _ in range(${FANOUT})]
assert got.count("waited") == ${FANOUT}, got
print((time.perf_counter() - t0) * 1000)`,
  'awaited together (asyncio.gather)': `import asyncio, mcp_tools, time
t0 = time.perf_counter()
got = await asyncio.gather(*(mcp_tools.tls.wait(ms=${WAIT_MS}) for _ in range(${FANOUT})))
assert got.count("waited") == ${FANOUT}, got
print((time.perf_counter() - t0) * 1000)`,
  'from 8 threads': `import mcp_tools, time
from concurrent.futures import ThreadPoolExecutor
t0 = time.perf_counter()
with ThreadPoolExecutor(8) as pool:
    got = list(pool.map(lambda _: mcp_tools.tls.wait(ms=${WAIT_MS}), range(${FANOUT})))
assert got.count("waited") == ${FANOUT}, got
print((time.perf_counter() - t0) * 1000)`,
};

async function fanOut() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-fanout-'));
  execFileSync(path.join(upstreams, 'make_test_ca.sh'), [dir], { stdio: 'ignore' });
  const child = spawn('/usr/bin/python3', [path.join(upstreams, 'tls_upstream.py'),
    path.join(dir, 'server.pem'), path.join(dir, 'server.key')], { stdio: ['ignore', 'pipe', 'ignore'] });
  const port = await new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve(parseInt(String(d), 10)));
    child.on('exit', (code) => reject(new Error(`tls_upstream.py exited ${code}`)));
  });
  const file = path.join(dir, 'upstreams.json');
  fs.writeFileSync(file, JSON.stringify({ mcpServers: { tls: {
    url: `https://localhost:${port}/mcp`, ca: 'ca.pem', allow: ['wait'] } } }));
  const { client } = await connectMcpExec({ env: { MCP_EXEC_UPSTREAMS: file,
    MCP_EXEC_MAX_TOOL_CALLS_IN_FLIGHT: String(IN_FLIGHT) } });
  const out = [];
  try {
    for (const [form, code] of Object.entries(FORMS)) {
      const samples = [];
      for (let r = 0; r < (quick ? 1 : 3); r++) {
        const res = await client.callTool({ name: 'exec', arguments: { code, timeout_s: 60 } });
        const o = res.structuredContent;
        if (res.isError || o?.exit_code !== 0 || o?.tool_calls !== FANOUT) {
          throw new Error(`fan-out ${form}: ${JSON.stringify(res).slice(0, 2000)}`);
        }
        samples.push(parseFloat(o.stdout));
      }
      out.push([form, p50(samples)]);
    }
  } finally {
    await client.close();
    child.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

const ideal = (FANOUT / IN_FLIGHT) * WAIT_MS;
console.log(`\nfan-out: ${FANOUT} calls to a tool that waits ${WAIT_MS} ms, https upstream on 127.0.0.1, ` +
  `MCP_EXEC_MAX_TOOL_CALLS_IN_FLIGHT=${IN_FLIGHT}, timed inside the run (p50 of ${quick ? 1 : 3})`);
console.log('| form | ms | against the ideal ' + ideal + ' ms |');
console.log('|---|---|---|');
for (const [form, ms] of await fanOut()) {
  console.log(`| ${form} | ${ms.toFixed(0)} | ${(ms / ideal).toFixed(2)}x |`);
}
