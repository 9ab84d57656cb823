// Code mode's hop (issue 23): the latency of a nested tool call made from a
// run through mcp-exec (`mcp_tools.everything.echo(...)` in a loop of 100,
// timed inside the run), next to the same 100 echo calls made by the
// official SDK client straight to the same upstream, in the same run of
// this script: server-everything over stdio, and over streamable HTTP on
// 127.0.0.1. Printed, never asserted; --quick (the bench_code_mode test)
// takes fewer rounds and fails only on a wrong answer.
import { spawn } from 'node:child_process';
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
