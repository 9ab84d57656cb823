// JSON-RPC to mcp-exec without an SDK, for what the official SDKs do not
// speak yet (the tasks extension: a tools/call answered with resultType
// "task" is refused by the v2 client's decoder, and v1 has only the older
// experimental tasks). Over stdio (a spawned server, one JSON line each way)
// and streamable HTTP (a server from startHttpServer(): 2025 sessions after
// initialize, or 2026-07-28 POSTs with their mirrored headers), in either
// protocol era. Every client declares what it is given in `capabilities`,
// at initialize (2025) and in every request's _meta (both eras).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

import { serverBin, serverEnvironment, withOverrides } from './mcp_client.mjs';

export const STATELESS_VERSION = '2026-07-28';
export const LEGACY_VERSION = '2025-11-25';
export const TASKS = 'io.modelcontextprotocol/tasks';
export const WITH_TASKS = { extensions: { [TASKS]: {} } };

// The _meta every request of 2026-07-28 carries.
function statelessMeta(capabilities, name) {
  return {
    'io.modelcontextprotocol/protocolVersion': STATELESS_VERSION,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name, version: '0.0.0' },
  };
}

class RawClient {
  constructor({ era, capabilities, name }) {
    this.era = era;
    this.capabilities = capabilities;
    this.name = name;
    this.nextId = 1;
  }

  // A request's params in this client's era (2026-07-28: the _meta envelope;
  // 2025: the capabilities in _meta too, since the tasks extension is
  // declared per request).
  params(params = {}) {
    if (this.era !== 'stateless') {
      if (Object.keys(this.capabilities).length === 0) return params;
      return { ...params, _meta: { ...(params._meta ?? {}), 'io.modelcontextprotocol/clientCapabilities': this.capabilities } };
    }
    return { ...params, _meta: { ...(params._meta ?? {}), ...statelessMeta(this.capabilities, this.name) } };
  }

  // The response message ({result} or {error}) of one request.
  async request(method, params = {}, { timeoutMs = 60_000 } = {}) {
    const id = this.nextId++;
    const msg = { jsonrpc: '2.0', id, method, params: this.params(params) };
    let timer;
    try {
      return await Promise.race([
        this.exchange(msg),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`${method} (id ${id}): no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  // The result of one request; an error response throws.
  // A request with params as given: no capabilities added.
  async bare(method, params = {}) {
    const id = this.nextId++;
    return this.exchange({ jsonrpc: '2.0', id, method, params });
  }

  async call(method, params = {}, options) {
    const answer = await this.request(method, params, options);
    if (answer.error) throw Object.assign(new Error(`${method}: ${JSON.stringify(answer.error)}`), { rpc: answer.error });
    return answer.result;
  }

  async callTool(args, options) {
    return this.call('tools/call', { name: 'exec', arguments: args }, options);
  }

  // A task polled (at its pollIntervalMs) until it is no longer working.
  async pollTask(taskId, { timeoutMs = 120_000, onPoll } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const task = await this.call('tasks/get', { taskId });
      onPoll?.(task);
      if (task.status !== 'working') return task;
      if (Date.now() > deadline) throw new Error(`task ${taskId} still working after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, Math.min(task.pollIntervalMs ?? 1000, 1000)));
    }
  }
}

// ---------------------------------------------------------------- stdio

class StdioRaw extends RawClient {
  constructor(options, child) {
    super(options);
    this.child = child;
    this.waiting = new Map();
    this.log = '';
    child.stderr.setEncoding('utf8').on('data', (c) => (this.log += c));
    createInterface({ input: child.stdout }).on('line', (line) => {
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      const w = msg.id !== undefined ? this.waiting.get(msg.id) : undefined;
      if (w && (msg.result !== undefined || msg.error !== undefined)) {
        this.waiting.delete(msg.id);
        w(msg);
      }
    });
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  exchange(msg) {
    return new Promise((resolve) => {
      this.waiting.set(msg.id, resolve);
      this.child.stdin.write(JSON.stringify(msg) + '\n');
    });
  }

  notify(method, params = {}) {
    this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method, params }) + '\n');
  }

  async close() {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * Spawns the server on stdio; era 'legacy' completes initialize (declaring
 * `capabilities`), 'stateless' sends them in every request's _meta.
 */
export async function rawStdio({ era, capabilities = {}, env = {}, name = 'raw-stdio' }) {
  const child = spawn(serverBin, [], {
    env: withOverrides(serverEnvironment(), env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const client = new StdioRaw({ era, capabilities, name }, child);
  if (era === 'legacy') {
    await client.call('initialize', {
      protocolVersion: LEGACY_VERSION,
      capabilities,
      clientInfo: { name, version: '0.0.0' },
    });
    client.notify('notifications/initialized');
  }
  return client;
}

// ----------------------------------------------------------------- HTTP

// The one JSON-RPC message of a POST's answer: JSON, or the event stream's
// message that answers `id`.
async function answerOf(res, id) {
  const type = res.headers.get('content-type') ?? '';
  const body = await res.text();
  if (type.startsWith('application/json')) return JSON.parse(body);
  for (const event of body.split('\n\n')) {
    const data = event
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n');
    if (!data) continue;
    const msg = JSON.parse(data);
    if (msg.id === id && (msg.result !== undefined || msg.error !== undefined)) return msg;
  }
  throw new Error(`HTTP ${res.status}: no answer to ${id} in ${body.slice(0, 500)}`);
}

class HttpRaw extends RawClient {
  constructor(options, url) {
    super(options);
    this.url = url;
    this.sessionId = undefined;
  }

  headers(msg) {
    const h = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (this.era === 'stateless') {
      h['mcp-protocol-version'] = STATELESS_VERSION;
      h['mcp-method'] = msg.method;
      const name = msg.params?.name ?? msg.params?.uri ?? msg.params?.taskId;
      if (typeof name === 'string') h['mcp-name'] = name;
      // The tool's x-mcp-header property, mirrored.
      const session = msg.method === 'tools/call' ? msg.params?.arguments?.session : undefined;
      if (typeof session === 'string') h['mcp-param-session'] = session;
    } else {
      h['mcp-protocol-version'] = LEGACY_VERSION;
      if (this.sessionId) h['mcp-session-id'] = this.sessionId;
    }
    return h;
  }

  async exchange(msg) {
    const res = await fetch(this.url, { method: 'POST', headers: this.headers(msg), body: JSON.stringify(msg) });
    if (msg.method === 'initialize') this.sessionId = res.headers.get('mcp-session-id') ?? undefined;
    return answerOf(res, msg.id);
  }

  async notify(method, params = {}) {
    const msg = { jsonrpc: '2.0', method, params };
    const res = await fetch(this.url, { method: 'POST', headers: this.headers(msg), body: JSON.stringify(msg) });
    await res.text();
  }

  // The 2025 session ends (DELETE): the client is gone.
  async close() {
    if (this.era !== 'legacy' || !this.sessionId) return;
    const res = await fetch(this.url, { method: 'DELETE', headers: this.headers({}) });
    await res.text();
    this.sessionId = undefined;
  }
}

/** A client of a server from startHttpServer() (transport 'http'). */
export async function rawHttp(server, { era, capabilities = {}, name = 'raw-http' }) {
  const client = new HttpRaw({ era, capabilities, name }, server.url);
  if (era === 'legacy') {
    await client.call('initialize', {
      protocolVersion: LEGACY_VERSION,
      capabilities,
      clientInfo: { name, version: '0.0.0' },
    });
    await client.notify('notifications/initialized');
  }
  return client;
}
