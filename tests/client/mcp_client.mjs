// Connects the official MCP TypeScript SDK client to a spawned mcp-exec over
// stdio, and spawns mcp-exec as an HTTP server (streamable HTTP or legacy
// HTTP+SSE) for the SDK's HTTP client transports. Shared by the SDK tests
// (sdk_stdio, parity and load tests) and the benchmark (bench/bench.mjs), so
// that all use the one SDK version pinned here.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const here = path.dirname(fileURLToPath(import.meta.url));

// The pinned SDK's client classes, for scripts outside this folder (the
// code-mode bench talks to other servers directly with them).
export { Client, StdioClientTransport, StreamableHTTPClientTransport };

/** The server binary: $MCP_EXEC_BIN, else the build tree's. */
export const serverBin = process.env.MCP_EXEC_BIN || path.resolve(here, '../../build/mcp-exec');

// The SDK passes only a few variables (HOME, PATH, ...) to the server. Forward
// the server's own settings, and the OpenBLAS kernel selection that some CPUs
// need (the server hands those two on to its Python runtime).
export function serverEnvironment() {
  const env = getDefaultEnvironment();
  for (const [name, value] of Object.entries(process.env)) {
    // MCP_EXEC_BIN names the binary for the tests; it is no server setting.
    if (name === 'MCP_EXEC_BIN') continue;
    if (name.startsWith('MCP_EXEC_') || name === 'OPENBLAS_CORETYPE' || name === 'OPENBLAS_L2_SIZE') {
      env[name] = value;
    }
  }
  return env;
}

// The server warms its Python runtime (1-2 s) before it answers initialize.
const INITIALIZE_TIMEOUT_MS = 20_000;

// Applies overrides to an environment: a string sets, undefined removes.
export function withOverrides(env, overrides) {
  const out = { ...env };
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) delete out[name];
    else out[name] = String(value);
  }
  return out;
}

/**
 * Spawns the server and completes the MCP initialize handshake.
 * Returns the client, its transport, and serverLog(): everything the server
 * wrote to stderr so far (JSON lines), for assertions and failure reports.
 * env: server settings on top of the forwarded MCP_EXEC_* variables (a value
 * of undefined removes one).
 */
export async function connectMcpExec({
  clientName = 'mcp-exec-sdk-client',
  env = {},
  command = serverBin,
  args = [],
  timeoutMs = INITIALIZE_TIMEOUT_MS,
} = {}) {
  // command/args: another way to start the server over stdio (the image
  // test's `podman run -i ... IMAGE`).
  const transport = new StdioClientTransport({
    command,
    args,
    env: withOverrides(serverEnvironment(), env),
    stderr: 'pipe',
  });
  // Drain stderr as it comes: an unread pipe would eventually block the server.
  let log = '';
  transport.stderr.setEncoding('utf8');
  transport.stderr.on('data', (chunk) => {
    log += chunk;
  });
  const client = new Client({ name: clientName, version: '0.0.0' });
  try {
    await client.connect(transport, { timeout: timeoutMs });
  } catch (err) {
    await client.close();
    err.message += `\nserver: ${command} ${args.join(' ')}\nserver stderr:\n${log}`;
    throw err;
  }
  return { client, transport, serverLog: () => log };
}

// ---------------------------------------------------------------------------
// mcp-exec as an HTTP server: MCP_EXEC_TRANSPORT=http (streamable HTTP at /mcp)
// or sse (legacy HTTP+SSE: GET any path opens the stream, POST /message).

/** A TCP port that was free a moment ago on 127.0.0.1 (bind port 0, close). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// The server warms its Python runtime (1-2 s) before /readyz answers 200.
const READY_TIMEOUT_MS = 30_000;
// On SIGTERM running calls get MCP_EXEC_SHUTDOWN_GRACE_S (default 20 s).
const STOP_TIMEOUT_MS = 30_000;

async function httpStatus(url) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return res.status;
  } catch {
    return 0;
  }
}

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Spawns mcp-exec with MCP_EXEC_TRANSPORT=transport ('http' or 'sse') on
 * 127.0.0.1 and a free port, and waits until /healthz and /readyz answer 200.
 * env: extra server settings (undefined removes a variable); authToken sets
 * MCP_EXEC_AUTH_TOKEN (without it, an inherited token is removed); bin: the
 * server binary (default serverBin).
 * Returns { port, origin, url, pid, child, log(), stdout(), exited, stop() }:
 * url is the MCP endpoint (/mcp for http, /sse for sse); exited resolves to
 * { code, signal } when the process ends; stop() sends SIGTERM and resolves
 * to the same (SIGKILL and a rejection if it does not exit in time).
 */
export async function startHttpServer({ transport = 'http', env = {}, authToken, attempts = 3, bin = serverBin } = {}) {
  if (transport !== 'http' && transport !== 'sse') throw new Error(`transport must be http or sse, not ${transport}`);
  let lastError;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const port = await freePort();
    try {
      return await spawnHttpServer({ transport, env, authToken, port, bin });
    } catch (err) {
      lastError = err;
      // Another process took the port between freePort() and the bind: retry
      // on a fresh one. Anything else is the server's failure.
      if (!err.portConflict) throw err;
    }
  }
  throw lastError;
}

async function spawnHttpServer({ transport, env, authToken, port, bin }) {
  const serverEnv = withOverrides(serverEnvironment(), {
    MCP_EXEC_AUTH_TOKEN: undefined,
    ...env,
    MCP_EXEC_TRANSPORT: transport,
    MCP_EXEC_ADDR: `127.0.0.1:${port}`,
    ...(authToken !== undefined ? { MCP_EXEC_AUTH_TOKEN: authToken } : {}),
  });
  const child = spawn(bin, [], { env: serverEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  let stdout = '';
  child.stderr.setEncoding('utf8').on('data', (chunk) => (log += chunk));
  child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
  const exited = new Promise((resolve) => {
    child.on('error', (err) => resolve({ code: null, signal: null, error: String(err) }));
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  let exit = null;
  exited.then((e) => (exit = e));

  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (exit) {
      const err = new Error(
        `mcp-exec (${transport}) exited before it was ready: ${JSON.stringify(exit)}\n` +
          `server: ${bin}\nserver stderr:\n${log}`,
      );
      err.portConflict = /listen_failed|cannot listen/.test(log) && /in use/i.test(log);
      throw err;
    }
    // Ready means this server listens (its own log says so), never merely
    // that something on the port answers.
    if (
      /"event":"listening"/.test(log) &&
      (await httpStatus(`${origin}/healthz`)) === 200 &&
      (await httpStatus(`${origin}/readyz`)) === 200
    ) {
      break;
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      await exited;
      throw new Error(`mcp-exec (${transport}) not ready within ${READY_TIMEOUT_MS} ms\nserver stderr:\n${log}`);
    }
    await delay(50);
  }

  const stop = async (timeoutMs = STOP_TIMEOUT_MS) => {
    if (!exit) child.kill('SIGTERM');
    let timer;
    const result = await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs, null)))]);
    clearTimeout(timer);
    if (result === null) {
      child.kill('SIGKILL');
      await exited;
      throw new Error(`mcp-exec did not exit within ${timeoutMs} ms of SIGTERM (killed)\nserver stderr:\n${log}`);
    }
    return result;
  };
  return {
    transport,
    port,
    origin,
    url: new URL(transport === 'http' ? '/mcp' : '/sse', origin),
    pid: child.pid,
    child,
    log: () => log,
    stdout: () => stdout,
    exited,
    stop,
  };
}

/**
 * Connects an SDK Client to a server from startHttpServer() with the SDK's
 * StreamableHTTPClientTransport (http) or SSEClientTransport (sse). headers
 * go on every request; for SSE the SDK sends requestInit.headers both on the
 * EventSource GET and on the POSTs (its EventSource fetch uses them).
 * Returns { client, transport }.
 */
export async function connectHttpClient(server, { headers, clientName = 'mcp-exec-sdk-client', url } = {}) {
  const requestInit = headers ? { headers } : undefined;
  const target = url ?? server.url;
  const transport =
    server.transport === 'http'
      ? new StreamableHTTPClientTransport(target, { requestInit })
      : new SSEClientTransport(target, { requestInit });
  const client = new Client({ name: clientName, version: '0.0.0' });
  try {
    await client.connect(transport, { timeout: INITIALIZE_TIMEOUT_MS });
  } catch (err) {
    await client.close().catch(() => {});
    throw err;
  }
  return { client, transport };
}

// --- Checks on a CallToolResult shared by the test files ---

// A result for failure messages: long strings (base64 data too) shortened.
export function brief(result) {
  return JSON.stringify(result, (key, value) =>
    typeof value === 'string' && value.length > 400
      ? `${value.slice(0, 200)}...<${value.length} chars>...${value.slice(-120)}`
      : value,
  );
}

// The text item (the one models read) is the structured result as JSON, but
// for a stream past MCP_EXEC_TEXT_OUTPUT_BYTES: the text holds its head and
// tail, and STREAM_in_text says how many bytes of each, of how many. Returns
// the text's own cut streams' notes ({} when nothing was cut).
export function checkTextItem(text, out) {
  const parsed = JSON.parse(text);
  const notes = {};
  for (const key of ['stdout', 'stderr']) {
    const note = parsed[`${key}_in_text`];
    if (note === undefined) continue;
    notes[key] = note;
    const m = /the first (\d+) and the last (\d+) of the (\d+) bytes of /.exec(note);
    assert.ok(m, `${key}_in_text says what is shown: ${note}`);
    const whole = Buffer.from(out[key]);
    const shown = Buffer.from(parsed[key]);
    const [head, tail] = [Number(m[1]), Number(m[2])];
    assert.equal(Number(m[3]), whole.length, note);
    assert.ok(head + tail < whole.length, note);
    assert.ok(shown.subarray(0, head).equals(whole.subarray(0, head)), `${key}: the head`);
    assert.ok(
      shown.subarray(shown.length - tail).equals(whole.subarray(whole.length - tail)),
      `${key}: the tail`,
    );
    parsed[key] = out[key];
    delete parsed[`${key}_in_text`];
  }
  assert.deepEqual(parsed, out, 'the text item is the structured result as JSON');
  return notes;
}

// A normal (non-error) result: content[0] is the structured result as JSON
// text (checkTextItem). Returns { out: structuredContent, extra: content
// after the text, cut: checkTextItem's notes }.
export function ok(result) {
  assert.equal(result.isError, false, `not a tool error: ${brief(result)}`);
  const out = result.structuredContent;
  assert.ok(out && typeof out === 'object', `structuredContent is present: ${brief(result)}`);
  assert.equal(result.content[0]?.type, 'text', 'the first content item is text');
  const cut = checkTextItem(result.content[0].text, out);
  return { out, extra: result.content.slice(1), cut };
}

// A tool error: isError, one text item, no structured result. Returns the text.
export function toolError(result) {
  assert.equal(result.isError, true, `a tool error: ${brief(result)}`);
  assert.equal(result.content[0]?.type, 'text');
  assert.equal(result.structuredContent, undefined, 'a tool error carries no structured result');
  return result.content[0].text;
}
