// A bounded load test of mcp-exec over streamable HTTP on 127.0.0.1: 50 idle
// server-sent event streams held open for the whole test, then 2,000
// tools/call print(1) through the official SDK client
// (StreamableHTTPClientTransport), 16 in flight over 16 clients. Zero errors
// allowed; prints calls/s, p50/p99 latency and the server's memory, and a
// line "LOAD_JSON {...}". Run from the repository root:
//   node --test tests/client/
// MCP_EXEC_BIN overrides the server binary; LOAD_CALLS, LOAD_IN_FLIGHT,
// LOAD_STREAMS, LOAD_TIMEOUT_S and LOAD_STALL_S override the sizes and the
// time bounds. The test asserts no time: a hang is caught as a stall (no
// call answered for LOAD_STALL_S, default 60 s, however slow the machine),
// and LOAD_TIMEOUT_S only keeps the file inside CTest's bound.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { connectHttpClient, startHttpServer } from './mcp_client.mjs';

function intFromEnv(name, fallback) {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer (got ${v})`);
  return n;
}

const CALLS = intFromEnv('LOAD_CALLS', 2000);
const IN_FLIGHT = intFromEnv('LOAD_IN_FLIGHT', 16); // one SDK client per call in flight
const IDLE_STREAMS = intFromEnv('LOAD_STREAMS', 50);
// The whole file stays inside the 600 s that CTest gives
// `node --test tests/client/`; a healthy run takes 10-60 s, a slow day's
// several times that.
const TIMEOUT_MS = intFromEnv('LOAD_TIMEOUT_S', 480) * 1000;
const STALL_MS = intFromEnv('LOAD_STALL_S', 60) * 1000;
const SERVER_ENV = {
  MCP_EXEC_MAX_CONCURRENT: '2',
  MCP_EXEC_MAX_QUEUE: '64',
  MCP_EXEC_MAX_STREAMS: '128',
  MCP_EXEC_AUTH_TOKEN: undefined,
};
const PROTOCOL_VERSION = '2025-06-18';

// ---------------------------------------------------------------------------
// Memory of the server and of its sandbox zygote, from /proc.

function procStatusKb(pid, field) {
  try {
    const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

// Proportional set size: shared pages (the zygote's and its pre-forked
// spares') counted once overall. Null where smaps_rollup is unreadable.
function pssKb(pid) {
  try {
    const m = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+) kB/m);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

function childrenOf(pid) {
  const out = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text) out.push(...text.split(/\s+/).map(Number));
    }
  } catch {
    // the process is gone
  }
  return [...new Set(out)];
}

function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

function memorySnapshot(serverPid) {
  const zygotes = childrenOf(serverPid).filter((pid) => cmdline(pid).includes('__zygote'));
  const zygote = zygotes[0] ?? null;
  // The zygote's own children are its pre-forked spare runners (and any run
  // in progress); their RSS is mostly pages shared with the zygote.
  const spares = zygote ? childrenOf(zygote) : [];
  // A spare may be used and reaped while we read: skip what vanished.
  const sum = (xs) => xs.reduce((a, b) => a + (b ?? 0), 0);
  const snap = {
    server_pid: serverPid,
    zygote_pid: zygote,
    server_rss_kb: procStatusKb(serverPid, 'VmRSS'),
    zygote_rss_kb: zygote ? procStatusKb(zygote, 'VmRSS') : null,
    spares: spares.length,
    spares_rss_kb: sum(spares.map((pid) => procStatusKb(pid, 'VmRSS'))),
    server_threads: threadCount(serverPid),
    pss_total_kb: pssKb(serverPid) === null ? null : sum([serverPid, ...(zygote ? [zygote] : []), ...spares].map(pssKb)),
  };
  snap.server_plus_zygote_rss_kb =
    snap.server_rss_kb === null ? null : snap.server_rss_kb + (snap.zygote_rss_kb ?? 0);
  return snap;
}

function threadCount(pid) {
  try {
    const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Threads:\s+(\d+)/m);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

// CPU seconds of a process and its reaped children (utime + stime + cutime +
// cstime; the runs are the zygote's children). Assumes 100 ticks a second.
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------

// Nearest-rank percentile of an ascending array.
function percentile(sorted, p) {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

const round2 = (x) => Math.round(x * 100) / 100;

async function metrics(origin) {
  const res = await fetch(new URL('/metrics', origin));
  assert.equal(res.status, 200, 'GET /metrics');
  const text = await res.text();
  const value = (name) => {
    const m = text.match(new RegExp(`^${name.replace(/[{}"=]/g, (c) => `\\${c}`)} (\\S+)$`, 'm'));
    return m ? Number(m[1]) : null;
  };
  return {
    runs_ok: value('mcp_exec_runs_total{outcome="ok"}'),
    runs_refused: value('mcp_exec_runs_total{outcome="at_capacity"}'),
    sessions: value('mcp_exec_sessions'),
    streams: value('mcp_exec_streams'),
    zygote_restarts: value('mcp_exec_zygote_restarts_total'),
  };
}

// An MCP session made with raw requests, and its GET event stream, left idle.
async function openIdleStream(url, n) {
  const jsonHeaders = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  const init = await fetch(url, {
    method: 'POST',
    headers: jsonHeaders,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: `idle-${n}`, version: '0' } },
    }),
  });
  const initBody = await init.text();
  assert.equal(init.status, 200, `initialize of idle session ${n}: ${initBody}`);
  const sessionId = init.headers.get('mcp-session-id');
  assert.ok(sessionId, `initialize of idle session ${n} returned an Mcp-Session-Id`);
  assert.equal(JSON.parse(initBody).result?.protocolVersion, PROTOCOL_VERSION);

  const sessionHeaders = { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': PROTOCOL_VERSION };
  const initialized = await fetch(url, {
    method: 'POST',
    headers: { ...jsonHeaders, ...sessionHeaders },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await initialized.body?.cancel();
  assert.equal(initialized.status, 202, `notifications/initialized of idle session ${n}`);

  const abort = new AbortController();
  const res = await fetch(url, {
    headers: { ...sessionHeaders, Accept: 'text/event-stream' },
    signal: abort.signal,
  });
  if (res.status !== 200) {
    const body = await res.text();
    assert.fail(`GET /mcp of idle session ${n}: HTTP ${res.status}: ${body}`);
  }
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const stream = { n, sessionId, sessionHeaders, abort, received: '', ended: false, error: null, closing: false };
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  // The server's first write (a comment) shows the stream is live.
  const first = await reader.read();
  assert.equal(first.done, false, `idle stream ${n} ended at once`);
  stream.received += first.value;
  stream.pump = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          stream.ended = true;
          return;
        }
        stream.received += value;
      }
    } catch (err) {
      if (!stream.closing) stream.error = err;
    }
  })();
  return stream;
}

describe('load over streamable HTTP', { timeout: TIMEOUT_MS }, () => {
  let server;
  const streams = [];
  const clients = [];
  const transportErrors = [];
  let watchdog;

  before(async () => {
    // The test bounds itself: past the limit, everything is torn down and the
    // file fails even if a request hangs.
    watchdog = setTimeout(() => {
      console.error(`load test: still running after ${TIMEOUT_MS + 30_000} ms, giving up`);
      server?.child.kill('SIGKILL');
      process.exit(1);
    }, TIMEOUT_MS + 30_000);
    watchdog.unref();
    server = await startHttpServer({ transport: 'http', env: SERVER_ENV });
  }, { timeout: 60_000 });

  after(async () => {
    for (const s of streams) {
      s.closing = true;
      s.abort.abort();
    }
    await Promise.allSettled(clients.map(({ client }) => client.close()));
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    clearTimeout(watchdog);
  });

  test(`${CALLS} calls of print(1), ${IN_FLIGHT} in flight, beside ${IDLE_STREAMS} idle streams`, async () => {
    const memoryAtReady = memorySnapshot(server.pid);
    assert.ok(memoryAtReady.server_rss_kb > 0, 'server VmRSS readable');
    assert.ok(memoryAtReady.zygote_pid, `found the zygote among the server's children: ${childrenOf(server.pid)}`);

    // 50 idle sessions with their event streams, opened a few at a time.
    for (let i = 0; i < IDLE_STREAMS; i += 10) {
      const batch = [];
      for (let j = i; j < Math.min(IDLE_STREAMS, i + 10); j++) batch.push(openIdleStream(server.url, j));
      streams.push(...(await Promise.all(batch)));
    }

    // The SDK clients; listTools() makes each validate results against the
    // exec outputSchema, as a real client would.
    for (let i = 0; i < IN_FLIGHT; i++) {
      const c = await connectHttpClient(server, { clientName: `load-${i}` });
      c.client.onerror = (err) => transportErrors.push(`client ${i}: ${err?.stack ?? err}`);
      clients.push(c);
      const { tools } = await c.client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['exec']);
    }
    // Each SDK client holds its own GET stream too, opened in the background
    // once its session is initialized.
    let gaugesBefore;
    const streamsDeadline = Date.now() + 10_000;
    do {
      gaugesBefore = await metrics(server.origin);
      if (gaugesBefore.streams === IDLE_STREAMS + IN_FLIGHT) break;
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() < streamsDeadline);
    assert.equal(gaugesBefore.streams, IDLE_STREAMS + IN_FLIGHT, `open streams before the calls: ${JSON.stringify(gaugesBefore)}`);
    const memoryBefore = memorySnapshot(server.pid);

    let next = 0;
    const latencies = [];
    const errors = [];
    let errorCount = 0;
    // A hang, told apart from a slow machine: no call answered for STALL_MS.
    let lastAnswer = performance.now();
    let stalled = null;
    const stallWatch = setInterval(() => {
      const quiet = performance.now() - lastAnswer;
      if (quiet > STALL_MS && !stalled) {
        stalled = `no call answered for ${Math.round(quiet / 1000)} s (LOAD_STALL_S) after ${latencies.length + errorCount} of ${CALLS}`;
        console.error(`load test: ${stalled}; stopping the server`);
        server?.child.kill('SIGKILL');
      }
    }, 1000);
    stallWatch.unref();
    const cpuServer0 = cpuSeconds(server.pid);
    const cpuZygote0 = cpuSeconds(memoryBefore.zygote_pid);
    const cpuClient0 = process.cpuUsage();
    const started = performance.now();
    await Promise.all(
      clients.map(async ({ client }, worker) => {
        while (next < CALLS) {
          const i = next++;
          const t0 = performance.now();
          try {
            const r = await client.callTool({ name: 'exec', arguments: { code: 'print(1)' } });
            const ms = performance.now() - t0;
            const out = r.structuredContent;
            if (r.isError || out?.stdout !== '1\n' || out?.exit_code !== 0 || out?.stderr !== '') {
              throw new Error(`unexpected result: ${JSON.stringify(r)}`);
            }
            latencies.push(ms);
            lastAnswer = performance.now();
          } catch (err) {
            lastAnswer = performance.now();
            errorCount++;
            if (errors.length < 20) errors.push(`call ${i} (client ${worker}): ${err?.stack ?? err}`);
          }
        }
      }),
    );
    const elapsedMs = performance.now() - started;
    clearInterval(stallWatch);
    assert.equal(stalled, null, 'the calls kept moving');
    const cpuClient = process.cpuUsage(cpuClient0);
    const cpu = {
      // Where the machine's time went during the calls: this test's client
      // (node, the SDK), the server's supervisor, and the zygote with its runs.
      client_s: round2((cpuClient.user + cpuClient.system) / 1e6),
      server_s: round2(cpuSeconds(server.pid) - cpuServer0),
      zygote_and_runs_s: round2(cpuSeconds(memoryBefore.zygote_pid) - cpuZygote0),
    };
    const memoryAfter = memorySnapshot(server.pid);
    const gaugesAfter = await metrics(server.origin);

    const sorted = [...latencies].sort((a, b) => a - b);
    const summary = {
      calls: CALLS,
      ok: latencies.length,
      errors: errorCount,
      in_flight: IN_FLIGHT,
      clients: clients.length,
      idle_streams: IDLE_STREAMS,
      max_concurrent: Number(SERVER_ENV.MCP_EXEC_MAX_CONCURRENT),
      elapsed_s: round2(elapsedMs / 1000),
      calls_per_s: round2((latencies.length / elapsedMs) * 1000),
      p50_ms: sorted.length ? round2(percentile(sorted, 50)) : null,
      p99_ms: sorted.length ? round2(percentile(sorted, 99)) : null,
      max_ms: sorted.length ? round2(sorted.at(-1)) : null,
      cpu_during_calls: cpu,
      memory: { at_ready: memoryAtReady, before: memoryBefore, after: memoryAfter },
      rss_kb: {
        server_before: memoryBefore.server_rss_kb,
        server_after: memoryAfter.server_rss_kb,
        zygote_before: memoryBefore.zygote_rss_kb,
        zygote_after: memoryAfter.zygote_rss_kb,
        total_before: memoryBefore.server_plus_zygote_rss_kb,
        total_after: memoryAfter.server_plus_zygote_rss_kb,
      },
      metrics_before: gaugesBefore,
      metrics_after: gaugesAfter,
      bin: server.child.spawnfile,
    };
    console.log(
      `load: ${summary.ok}/${CALLS} calls ok in ${summary.elapsed_s} s = ${summary.calls_per_s} calls/s; ` +
        `latency p50 ${summary.p50_ms} ms, p99 ${summary.p99_ms} ms, max ${summary.max_ms} ms; ` +
        `server RSS ${summary.rss_kb.server_before} -> ${summary.rss_kb.server_after} kB, ` +
        `+zygote ${summary.rss_kb.total_before} -> ${summary.rss_kb.total_after} kB; ` +
        `CPU s: client ${cpu.client_s}, server ${cpu.server_s}, zygote+runs ${cpu.zygote_and_runs_s}`,
    );
    console.log(`LOAD_JSON ${JSON.stringify(summary)}`);

    assert.deepEqual(errors, [], `${errorCount} of ${CALLS} calls failed`);
    assert.equal(errorCount, 0);
    assert.equal(latencies.length, CALLS, 'every call answered');
    assert.deepEqual(transportErrors, [], 'no transport errors in the SDK clients');
    assert.equal(gaugesAfter.runs_ok, CALLS, 'the server counted every run as ok');
    assert.equal(gaugesAfter.runs_refused, 0, 'no run refused as at capacity');
    assert.equal(gaugesAfter.zygote_restarts, 0, 'the zygote never restarted');
    assert.equal(memoryAfter.zygote_pid, memoryBefore.zygote_pid, 'same zygote before and after');

    // The idle streams lived through the load.
    for (const s of streams) {
      assert.equal(s.error, null, `idle stream ${s.n} errored: ${s.error}`);
      assert.equal(s.ended, false, `idle stream ${s.n} was ended by the server`);
    }
    assert.equal(gaugesAfter.streams, IDLE_STREAMS + IN_FLIGHT, `open streams after the calls: ${JSON.stringify(gaugesAfter)}`);

    // Close them: the idle sessions end with DELETE, the SDK clients with
    // theirs (terminateSession), then the streams' connections go.
    for (const s of streams) {
      const res = await fetch(server.url, { method: 'DELETE', headers: s.sessionHeaders });
      await res.body?.cancel();
      assert.equal(res.status, 200, `DELETE of idle session ${s.n}`);
    }
    for (const s of streams) {
      s.closing = true;
      s.abort.abort();
    }
    await Promise.all(streams.map((s) => s.pump));
    for (const { client, transport } of clients) {
      await transport.terminateSession();
      await client.close();
    }
    clients.length = 0;
    // The server notices closed streams within its 1 s poll.
    let gauges;
    const deadline = Date.now() + 10_000;
    do {
      await new Promise((r) => setTimeout(r, 200));
      gauges = await metrics(server.origin);
    } while ((gauges.streams !== 0 || gauges.sessions !== 0) && Date.now() < deadline);
    assert.equal(gauges.sessions, 0, 'every session closed');
    assert.equal(gauges.streams, 0, 'every stream closed');

    const exit = await server.stop();
    assert.deepEqual(exit, { code: 0, signal: null }, `exit status after SIGTERM\nserver stderr (tail):\n${server.log().slice(-4000)}`);
    assert.equal(server.stdout(), '', 'nothing on stdout');
  });
});
