// The protocol eras side by side (issue 21): the same calls through the v1
// SDK client (protocol 2025-11-25, after initialize) and the v2 client pinned
// to 2026-07-28 (stateless), over stdio and over streamable HTTP, in one run:
// print(1) in a fresh process, and print(1) into a live session (session
// "new" once, then its handle). Also each client's connect over stdio,
// legacy against auto (the v2 client's probe of server/discover first).
// Printed, never asserted.
import { spawn } from 'node:child_process';
import readline from 'node:readline';

import { connectHttpClient, connectMcpExec, serverBin, startHttpServer } from '../tests/client/mcp_client.mjs';
import { connectV2Http, connectV2Stdio, STATELESS_VERSION } from '../tests/client/v2_client.mjs';

const PRINT = { code: 'print(1)\n', expect: '1\n' };

function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  const round = (x) => Math.round(x * 100) / 100;
  return { n: sorted.length, p50_ms: round(at(50)), p99_ms: round(at(99)) };
}

// One exec call, end to end; fails the bench on anything but print(1)'s answer.
async function timedCall(client, args, what) {
  const started = performance.now();
  const result = await client.callTool({ name: 'exec', arguments: args });
  const elapsed = performance.now() - started;
  const out = result.structuredContent;
  if (result.isError || out?.exit_code !== 0 || out?.stdout !== PRINT.expect) {
    throw new Error(`eras, ${what}: ${JSON.stringify(result)}`);
  }
  return { elapsed, out };
}

async function measureClient(client, label, warmup, n) {
  const oneShot = [];
  for (let i = 0; i < warmup + n; i++) {
    const { elapsed } = await timedCall(client, { code: PRINT.code }, `${label} print(1)`);
    if (i >= warmup) oneShot.push(elapsed);
  }
  const { out } = await timedCall(client, { code: PRINT.code, session: 'new' }, `${label} session "new"`);
  const session = [];
  for (let i = 0; i < warmup + n; i++) {
    const { elapsed, out: o } = await timedCall(client, { code: PRINT.code, session: out.session }, `${label} session`);
    if (o.session_new) throw new Error(`eras, ${label}: the session started anew`);
    if (i >= warmup) session.push(elapsed);
  }
  return { print: stats(oneShot), session: stats(session) };
}

// From spawning the server: connect() returned, and the first call's
// result (print(1)) came back: what a user waits for.
async function connectTime(connect, rounds) {
  const connected = [];
  const first = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    const ctx = await connect();
    connected.push(performance.now() - started);
    try {
      await timedCall(ctx.client, { code: PRINT.code }, 'first call');
      first.push(performance.now() - started);
    } finally {
      await ctx.close();
    }
  }
  return { ...stats(connected), first_result: stats(first) };
}

// The calls of one round, the eras' order swapped every other round: a
// one-shot call right after another one-shot call waits for the spare runner
// the first one used, and would be slower whatever its era.
function balanced(i, handle) {
  const round = [
    ['stateless', null],
    ['stateless', handle],
    ['legacy', null],
    ['legacy', handle],
  ];
  return i % 2 ? [...round.slice(2), ...round.slice(0, 2)] : round;
}

// The times of one era and kind ("legacy", "stateless_session"...) as stats.
const statsOf = (times) => Object.fromEntries(Object.entries(times).map(([k, v]) => [k, stats(v)]));

// The server alone over streamable HTTP: one 2025 session (initialize) and
// stateless POSTs with their headers, the same calls as rawStdio.
async function rawHttp(warmup, n) {
  const server = await startHttpServer({ transport: 'http' });
  const base = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  const post = async (body, headers) => {
    const res = await fetch(server.url, { method: 'POST', headers: { ...base, ...headers }, body: JSON.stringify(body) });
    const text = await res.text();
    const data = text.startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data: ')).pop()?.slice(6);
    return { msg: JSON.parse(data ?? '{}'), sid: res.headers.get('mcp-session-id') };
  };
  const meta = {
    'io.modelcontextprotocol/protocolVersion': STATELESS_VERSION,
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const call = (era, sid, args) => {
    const params = { name: 'exec', arguments: args };
    if (era === 'legacy') return post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params }, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' });
    const headers = { 'MCP-Protocol-Version': STATELESS_VERSION, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'exec' };
    if (args.session) headers['Mcp-Param-Session'] = args.session;
    return post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { ...params, _meta: meta } }, headers);
  };
  try {
    const { sid } = await post(
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } },
      {},
    );
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' }).catch(() => {});
    const made = await call('stateless', sid, { code: 'x = 1', session: 'new' });
    const handle = made.msg.result?.structuredContent?.session;
    const times = { legacy: [], stateless: [], legacy_session: [], stateless_session: [] };
    for (let i = 0; i < warmup + n; i++) {
      for (const [era, session] of balanced(i, handle)) {
        const args = session ? { code: PRINT.code, session } : { code: PRINT.code };
        const started = performance.now();
        const { msg } = await call(era, sid, args);
        const elapsed = performance.now() - started;
        if (msg.result?.structuredContent?.stdout !== PRINT.expect) throw new Error(`eras, raw http ${era}: ${JSON.stringify(msg)}`);
        if (i >= warmup) times[session ? `${era}_session` : era].push(elapsed);
      }
    }
    return statsOf(times);
  } finally {
    await server.stop();
  }
}

// The server alone, without either SDK's own cost: one stdio process, a
// 2025 initialize, then print(1) calls of either era on the same
// connection, alternating, as raw JSON-RPC lines.
async function rawStdio(warmup, n) {
  const child = spawn(serverBin, [], { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env } });
  const lines = readline.createInterface({ input: child.stdout });
  const waiting = new Map();
  lines.on('line', (line) => {
    const msg = JSON.parse(line);
    waiting.get(msg.id)?.(msg);
    waiting.delete(msg.id);
  });
  let nextId = 1;
  const request = (method, params) =>
    new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  const meta = {
    'io.modelcontextprotocol/protocolVersion': STATELESS_VERSION,
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  try {
    await request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    const made = await request('tools/call', { name: 'exec', arguments: { code: 'x = 1', session: 'new' }, _meta: meta });
    const handle = made.result?.structuredContent?.session;
    const times = { legacy: [], stateless: [], legacy_session: [], stateless_session: [] };
    for (let i = 0; i < warmup + n; i++) {
      for (const [era, session] of balanced(i, handle)) {
        const params = { name: 'exec', arguments: { code: PRINT.code } };
        if (session) params.arguments.session = session;
        if (era === 'stateless') params._meta = meta;
        const started = performance.now();
        const answer = await request('tools/call', params);
        const elapsed = performance.now() - started;
        if (answer.result?.structuredContent?.stdout !== PRINT.expect) {
          throw new Error(`eras, raw ${era}: ${JSON.stringify(answer)}`);
        }
        if (i >= warmup) times[session ? `${era}_session` : era].push(elapsed);
      }
    }
    return statsOf(times);
  } finally {
    child.stdin.end();
    await new Promise((resolve) => child.on('close', resolve));
  }
}

/** Runs the eras; returns { server (its name and version), rows, raw, connect }. */
export async function runEras({ warmup, n, connectRounds }) {
  const rows = [];
  let server;
  // stdio: a server per client.
  {
    const v1 = await connectMcpExec({ clientName: 'bench-eras-v1' });
    server = v1.client.getServerVersion();
    try {
      rows.push({ transport: 'stdio', era: '2025-11-25 (v1 client)', ...(await measureClient(v1.client, 'stdio v1', warmup, n)) });
    } finally {
      await v1.client.close();
    }
    const v2 = await connectV2Stdio('bench-eras-v2', { pin: STATELESS_VERSION });
    try {
      rows.push({ transport: 'stdio', era: `${STATELESS_VERSION} (v2 client)`, ...(await measureClient(v2.client, 'stdio v2', warmup, n)) });
    } finally {
      await v2.close();
    }
  }
  // streamable HTTP: one server, both clients.
  const http = await startHttpServer({ transport: 'http' });
  try {
    const v1 = await connectHttpClient(http, { clientName: 'bench-eras-v1' });
    try {
      rows.push({ transport: 'http', era: '2025-11-25 (v1 client)', ...(await measureClient(v1.client, 'http v1', warmup, n)) });
    } finally {
      await v1.transport.terminateSession().catch(() => {});
      await v1.client.close();
    }
    const v2 = await connectV2Http(http, 'bench-eras-v2', { pin: STATELESS_VERSION });
    try {
      rows.push({ transport: 'http', era: `${STATELESS_VERSION} (v2 client)`, ...(await measureClient(v2.client, 'http v2', warmup, n)) });
    } finally {
      await v2.close();
    }
  } finally {
    await http.stop();
  }
  const raw = { stdio: await rawStdio(warmup, n), http: await rawHttp(warmup, n) };
  // Connecting over stdio (a server start each), and the first result: the
  // v2 client in legacy mode against auto and pinned to 2026-07-28, which
  // first probe server/discover (on a sibling server they then end).
  const connect = {
    legacy: await connectTime(() => connectV2Stdio('bench-connect', 'legacy'), connectRounds),
    auto: await connectTime(() => connectV2Stdio('bench-connect', 'auto'), connectRounds),
    pinned: await connectTime(() => connectV2Stdio('bench-connect', { pin: STATELESS_VERSION }), connectRounds),
  };
  return { server, rows, raw, connect };
}

export function printEras({ rows, raw, connect }) {
  console.log('protocol eras: print(1), one-shot and into a live session (handle from session "new"), end to end');
  const header = ['transport', 'era', 'n', 'print p50', 'print p99', 'session p50', 'session p99'];
  const lines = rows.map((r) => [
    r.transport,
    r.era,
    String(r.print.n),
    r.print.p50_ms.toFixed(2),
    r.print.p99_ms.toFixed(2),
    r.session.p50_ms.toFixed(2),
    r.session.p99_ms.toFixed(2),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(fmt(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const l of lines) console.log(fmt(l));
  for (const transport of ['stdio', 'http']) {
    const [legacy, stateless] = rows.filter((r) => r.transport === transport);
    if (!legacy || !stateless) continue;
    const ratio = (k) => (stateless[k].p50_ms / legacy[k].p50_ms).toFixed(2);
    console.log(`${transport}: 2026-07-28 p50 / 2025-11-25 p50 = ${ratio('print')} (print), ${ratio('session')} (session)`);
  }
  for (const [transport, r] of Object.entries(raw)) {
    const ratio = (k) => (r[`stateless${k}`].p50_ms / r[`legacy${k}`].p50_ms).toFixed(2);
    console.log(
      `the server alone over ${transport} (raw JSON-RPC, one connection, eras alternating, n ${r.legacy.n}): ` +
        `print(1) p50 ${r.legacy.p50_ms.toFixed(2)} (2025-11-25) / ${r.stateless.p50_ms.toFixed(2)} ms (2026-07-28), ` +
        `ratio ${ratio('')}; into a session ${r.legacy_session.p50_ms.toFixed(2)} / ` +
        `${r.stateless_session.p50_ms.toFixed(2)} ms, ratio ${ratio('_session')}`,
    );
  }
  const vs = (mode, k) => (k(connect[mode]) / k(connect.legacy)).toFixed(2);
  const line = (k) =>
    `legacy p50 ${k(connect.legacy).toFixed(0)} ms, auto ${k(connect.auto).toFixed(0)} ms (${vs('auto', k)}x), ` +
    `pinned ${k(connect.pinned).toFixed(0)} ms (${vs('pinned', k)}x)`;
  console.log(
    `over stdio from the server's spawn (v2 client, n ${connect.legacy.n}): connect() ${line((c) => c.p50_ms)}; ` +
      `first result (print(1)) ${line((c) => c.first_result.p50_ms)}`,
  );
}
