// Transport parity: one scenario set run through the official MCP TypeScript
// SDK client on all three transports of mcp-exec -- stdio
// (StdioClientTransport), streamable HTTP (StreamableHTTPClientTransport at
// /mcp) and legacy HTTP+SSE (SSEClientTransport at /sse) -- the HTTP ones with
// and without MCP_EXEC_AUTH_TOKEN. Each scenario is checked on its own, then
// the results (less duration_ms and queue_ms) must be identical everywhere.
// Run from the repository root:
//   node --test tests/client/
// MCP_EXEC_BIN overrides the server binary.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { connectHttpClient, connectMcpExec, startHttpServer } from './mcp_client.mjs';

const TEST_TIMEOUT_MS = 20_000;
const SETUP_TIMEOUT_MS = 60_000;
// Two server settings: the defaults for most scenarios, and a 100-byte output
// budget for truncation. (With a 100-byte budget the exception scenario's
// traceback, 113 bytes, would be cut before its `ValueError: x` line.)
// Within a group every server has the same settings, so that tools/list,
// whose description quotes the limits, agrees across transports too.
const DEFAULT_ENV = { MCP_EXEC_MAX_OUTPUT_BYTES: undefined };
const SMALL_OUTPUT_ENV = { MCP_EXEC_MAX_OUTPUT_BYTES: '100' };
const TOKEN = `parity-${randomBytes(12).toString('hex')}`;

// What a scenario produced, with the timings and the resource URIs (random
// per run) left out: { result } for an answer, { error: { code, message } }
// for a rejected request.
const RESOURCE_ID = /mcp-exec:\/\/resource\/[0-9a-f]{32}\//g;
function normalizeResult(result) {
  const copy = structuredClone(result);
  const strip = (o) => {
    if (o && typeof o === 'object') {
      delete o.duration_ms;
      delete o.queue_ms;
      for (const key of ['stdout_resource', 'stderr_resource']) {
        if (typeof o[key] === 'string') o[key] = o[key].replace(RESOURCE_ID, 'mcp-exec://resource/ID/');
      }
    }
    return o;
  };
  strip(copy.structuredContent);
  copy.content = copy.content?.map((item) => {
    if (item.type === 'resource_link') {
      return { ...item, uri: item.uri.replace(RESOURCE_ID, 'mcp-exec://resource/ID/') };
    }
    if (item.type !== 'text') return item;
    try {
      const parsed = JSON.parse(item.text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
        return { ...item, text: undefined, json: strip(parsed) };
      }
    } catch {
      // plain text: kept as is
    }
    return item;
  });
  return copy;
}

async function observe(promise) {
  try {
    return { result: normalizeResult(await promise) };
  } catch (err) {
    return { error: { code: err.code, message: err.message } };
  }
}

function ok(obs) {
  assert.ok(obs.result, `an answer, not a rejection: ${JSON.stringify(obs.error)}`);
  assert.equal(obs.result.isError, false, `not a tool error: ${JSON.stringify(obs.result)}`);
  const out = obs.result.structuredContent;
  assert.ok(out, 'structuredContent is present');
  // The text content repeats the structured result.
  assert.equal(obs.result.content[0].type, 'text');
  assert.deepEqual(obs.result.content[0].json, out);
  return out;
}

function toolError(obs) {
  assert.ok(obs.result, `an answer, not a rejection: ${JSON.stringify(obs.error)}`);
  assert.equal(obs.result.isError, true, `a tool error: ${JSON.stringify(obs.result)}`);
  assert.equal(obs.result.content[0].type, 'text');
  return obs.result.content[0].text;
}

const exec = (args) => (client) => client.callTool({ name: 'exec', arguments: args });

const SCENARIOS = [
  {
    name: 'hello',
    run: exec({ code: 'print("hello")' }),
    check(obs) {
      const out = ok(obs);
      assert.equal(out.stdout, 'hello\n');
      assert.equal(out.stderr, '');
      assert.equal(out.exit_code, 0);
      assert.equal(out.timed_out, false);
      assert.equal(out.truncated, false);
    },
  },
  {
    name: 'stderr',
    run: exec({ code: 'import sys; print("e", file=sys.stderr)' }),
    check(obs) {
      const out = ok(obs);
      assert.equal(out.stdout, '');
      assert.equal(out.stderr, 'e\n');
      assert.equal(out.exit_code, 0);
    },
  },
  {
    name: 'exit code',
    run: exec({ code: 'import sys; sys.exit(3)' }),
    check(obs) {
      const out = ok(obs);
      assert.equal(out.exit_code, 3);
      assert.equal(out.stdout, '');
      assert.equal(out.timed_out, false);
    },
  },
  {
    name: 'exception',
    run: exec({ code: 'raise ValueError("x")' }),
    check(obs) {
      const out = ok(obs);
      assert.equal(out.exit_code, 1);
      assert.ok(out.stderr.split('\n').includes('ValueError: x'), `traceback line in stderr: ${JSON.stringify(out.stderr)}`);
      assert.match(out.stderr, /^Traceback \(most recent call last\):/);
    },
  },
  {
    name: 'stdin',
    run: exec({ code: 'print(input()[::-1])', stdin: 'abc' }),
    check(obs) {
      const out = ok(obs);
      assert.equal(out.stdout, 'cba\n');
      assert.equal(out.exit_code, 0);
    },
  },
  {
    name: 'unicode',
    run: exec({ code: 'print("héllo ✓ 日本")' }),
    check(obs) {
      const out = ok(obs);
      assert.equal(out.stdout, 'héllo ✓ 日本\n');
      assert.equal(out.exit_code, 0);
    },
  },
  {
    name: 'timeout',
    run: exec({ code: 'import time; time.sleep(5)', timeout_s: 1 }),
    check(obs) {
      const out = ok(obs);
      assert.equal(out.timed_out, true);
      assert.equal(out.exit_code, -1);
    },
  },
  {
    name: 'empty code',
    run: exec({ code: '  ' }),
    check(obs) {
      assert.equal(toolError(obs), 'code must not be empty');
      assert.equal(obs.result.structuredContent, undefined);
    },
  },
  {
    name: 'timeout_s as a string',
    run: exec({ code: 'print(1)', timeout_s: '5' }),
    check(obs) {
      assert.match(toolError(obs), /timeout_s/);
    },
  },
  {
    name: 'unknown tool',
    run: (client) => client.callTool({ name: 'nope', arguments: { code: 'print(1)' } }),
    check(obs) {
      assert.ok(obs.error, `a rejection, not an answer: ${JSON.stringify(obs.result)}`);
      assert.equal(obs.error.code, -32602);
    },
  },
];

// Scenarios of the server with a 100-byte output budget.
const SMALL_OUTPUT_SCENARIOS = [
  {
    name: 'truncation',
    run: exec({ code: 'print("x"*500)' }),
    check(obs) {
      const out = ok(obs);
      assert.equal(out.truncated, true);
      assert.equal(out.stdout.length, 100);
      assert.equal(out.stdout, 'x'.repeat(100));
      assert.equal(out.exit_code, 0);
    },
  },
  SCENARIOS[0], // hello: within the budget, not truncated
];

// group -> label -> { initialize, tools, scenarios: { name -> observation } }
const observed = new Map();

// The scenario set on one connected client. setup() returns { client,
// log() } and teardown(ctx) ends the session and the server.
function scenarioSuite(group, label, scenarios, { setup, teardown }) {
  describe(`${group}: scenarios over ${label}`, () => {
    let ctx;
    const record = { scenarios: {} };

    before(async () => {
      ctx = await setup();
      // Transport trouble the calls would not show (a failed GET stream, an
      // unparsable event) reaches the client's onerror.
      ctx.transportErrors = [];
      ctx.client.onerror = (err) => ctx.transportErrors.push(String(err?.stack ?? err));
      if (!observed.has(group)) observed.set(group, new Map());
      observed.get(group).set(label, record);
    }, { timeout: SETUP_TIMEOUT_MS });

    // A safety net when a test failed before the teardown test ran.
    after(async () => {
      if (ctx && !ctx.tornDown) await ctx.abandon?.();
    });

    test('initialize reports mcp-exec with the tools capability', { timeout: TEST_TIMEOUT_MS }, () => {
      const info = ctx.client.getServerVersion();
      assert.equal(info.name, 'mcp-exec');
      const capabilities = ctx.client.getServerCapabilities();
      assert.ok(capabilities?.tools, 'server advertises tools');
      record.initialize = { serverInfo: info, capabilities, instructions: ctx.client.getInstructions() };
    });

    test('tools/list returns the one exec tool', { timeout: TEST_TIMEOUT_MS }, async () => {
      const { tools } = await ctx.client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['exec']);
      assert.deepEqual(tools[0].inputSchema.required, ['code']);
      assert.ok(tools[0].outputSchema, 'exec has an outputSchema');
      record.tools = tools;
    });

    for (const scenario of scenarios) {
      test(`scenario: ${scenario.name}`, { timeout: TEST_TIMEOUT_MS }, async () => {
        const obs = await observe(scenario.run(ctx.client));
        record.scenarios[scenario.name] = obs;
        try {
          scenario.check(obs);
        } catch (err) {
          err.message += `\nobserved over ${label}: ${JSON.stringify(obs)}`;
          throw err;
        }
      });
    }

    test('the session ends and the server exits 0', { timeout: 40_000 }, async () => {
      ctx.tornDown = true;
      assert.deepEqual(ctx.transportErrors, [], 'no transport errors during the session');
      await teardown(ctx);
    });
  });
}

function stdioSetup(env) {
  return async () => {
    const { client, transport, serverLog } = await connectMcpExec({ clientName: 'parity-stdio', env });
    return { client, transport, log: serverLog, abandon: () => client.close() };
  };
}

async function stdioTeardown(ctx) {
  await ctx.client.close();
  // close() ends stdin; the SDK escalates to signals after 2 s. The server
  // logs its exit status last.
  const deadline = Date.now() + 5000;
  let stopped;
  while (!stopped && Date.now() < deadline) {
    stopped = ctx
      .log()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .find((e) => e.event === 'stopped');
    if (!stopped) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(stopped?.exit_status, 0, `server logged stopped with exit_status 0:\n${ctx.log()}`);
}

function httpSetup(transport, env, token) {
  return async () => {
    const server = await startHttpServer({ transport, env, authToken: token });
    try {
      const headers = token ? { 'X-MCP-AUTH': token } : undefined;
      const { client, transport: clientTransport } = await connectHttpClient(server, {
        headers,
        clientName: `parity-${transport}`,
      });
      return {
        server,
        client,
        clientTransport,
        log: server.log,
        abandon: async () => {
          await client.close().catch(() => {});
          await server.stop().catch(() => {});
        },
      };
    } catch (err) {
      await server.stop().catch(() => {});
      err.message += `\nserver stderr:\n${server.log()}`;
      throw err;
    }
  };
}

async function httpTeardown(ctx) {
  if (ctx.server.transport === 'http') {
    // Ends the session on the server (DELETE /mcp) before the client goes.
    await ctx.clientTransport.terminateSession();
  }
  await ctx.client.close();
  const exit = await ctx.server.stop();
  assert.deepEqual(exit, { code: 0, signal: null }, `exit status after SIGTERM\nserver stderr:\n${ctx.server.log()}`);
  assert.equal(ctx.server.stdout(), '', 'the server writes nothing on stdout in http/sse mode');
}

const DEFAULTS = 'default limits';
const SMALL = 'MCP_EXEC_MAX_OUTPUT_BYTES=100';
const stdio = { teardown: stdioTeardown };
const http = { teardown: httpTeardown };
scenarioSuite(DEFAULTS, 'stdio', SCENARIOS, { ...stdio, setup: stdioSetup(DEFAULT_ENV) });
scenarioSuite(DEFAULTS, 'streamable HTTP', SCENARIOS, { ...http, setup: httpSetup('http', DEFAULT_ENV) });
scenarioSuite(DEFAULTS, 'legacy SSE', SCENARIOS, { ...http, setup: httpSetup('sse', DEFAULT_ENV) });
scenarioSuite(DEFAULTS, 'streamable HTTP with auth token', SCENARIOS, { ...http, setup: httpSetup('http', DEFAULT_ENV, TOKEN) });
scenarioSuite(DEFAULTS, 'legacy SSE with auth token', SCENARIOS, { ...http, setup: httpSetup('sse', DEFAULT_ENV, TOKEN) });
scenarioSuite(SMALL, 'stdio', SMALL_OUTPUT_SCENARIOS, { ...stdio, setup: stdioSetup(SMALL_OUTPUT_ENV) });
scenarioSuite(SMALL, 'streamable HTTP', SMALL_OUTPUT_SCENARIOS, { ...http, setup: httpSetup('http', SMALL_OUTPUT_ENV) });
scenarioSuite(SMALL, 'legacy SSE', SMALL_OUTPUT_SCENARIOS, { ...http, setup: httpSetup('sse', SMALL_OUTPUT_ENV) });

// Requests without the token, or with a wrong one, are refused with 401; the
// SDK clients fail to connect because of it.
for (const transport of ['http', 'sse']) {
  describe(`auth over ${transport === 'http' ? 'streamable HTTP' : 'legacy SSE'}`, () => {
    let server;
    before(async () => {
      server = await startHttpServer({ transport, env: DEFAULT_ENV, authToken: TOKEN });
    }, { timeout: SETUP_TIMEOUT_MS });
    after(async () => {
      if (server) await server.stop().catch(() => {});
    });

    for (const [what, headers] of [
      ['without a token', undefined],
      ['with a wrong token', { 'X-MCP-AUTH': `${TOKEN}x` }],
      ['with an empty token', { 'X-MCP-AUTH': '' }],
    ]) {
      test(`the SDK client cannot connect ${what} (401)`, { timeout: TEST_TIMEOUT_MS }, async () => {
        await assert.rejects(connectHttpClient(server, { headers }), (err) => {
          // StreamableHTTPError and SseError carry the HTTP status as code.
          assert.equal(err.code, 401, `rejected because of a 401: ${err}`);
          return true;
        });
      });
    }

    test('health probes are exempt, /metrics is not', { timeout: TEST_TIMEOUT_MS }, async () => {
      for (const [p, status] of [['/healthz', 200], ['/readyz', 200], ['/metrics', 401]]) {
        const res = await fetch(new URL(p, server.origin));
        await res.body?.cancel();
        assert.equal(res.status, status, `GET ${p} without a token`);
      }
      const res = await fetch(new URL('/metrics', server.origin), { headers: { 'X-MCP-AUTH': TOKEN } });
      assert.equal(res.status, 200, 'GET /metrics with the token');
      await res.body?.cancel();
    });

    test('every MCP request of an authenticated session needs the token', { timeout: TEST_TIMEOUT_MS }, async () => {
      const good = { 'X-MCP-AUTH': TOKEN };
      const { client, transport: clientTransport } = await connectHttpClient(server, { headers: good });
      try {
        const r = await client.callTool({ name: 'exec', arguments: { code: 'print(1)' } });
        assert.equal(r.structuredContent?.stdout, '1\n');
        const body = JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list' });
        let res;
        if (transport === 'http') {
          const sessionHeaders = {
            'Mcp-Session-Id': clientTransport.sessionId,
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
          };
          res = await fetch(server.url, { method: 'POST', headers: sessionHeaders, body });
          assert.equal(res.status, 401, 'POST /mcp of a live session without the token');
          await res.body?.cancel();
          res = await fetch(server.url, { headers: { ...sessionHeaders, Accept: 'text/event-stream' } });
          assert.equal(res.status, 401, 'GET /mcp of a live session without the token');
          await res.body?.cancel();
          res = await fetch(server.url, { method: 'DELETE', headers: sessionHeaders });
          assert.equal(res.status, 401, 'DELETE /mcp of a live session without the token');
          await res.body?.cancel();
        } else {
          const endpoint = clientTransport._endpoint; // /message?sessionId=... from the endpoint event
          assert.ok(endpoint, 'the SSE client got its endpoint');
          res = await fetch(endpoint, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
          assert.equal(res.status, 401, 'POST /message of a live session without the token');
          await res.body?.cancel();
          res = await fetch(server.url, { headers: { Accept: 'text/event-stream' } });
          assert.equal(res.status, 401, 'GET /sse without the token');
          await res.body?.cancel();
        }
        // The session still works with the token.
        const again = await client.callTool({ name: 'exec', arguments: { code: 'print(2)' } });
        assert.equal(again.structuredContent?.stdout, '2\n');
      } finally {
        await client.close();
      }
    });

    test('SIGTERM: the server exits 0', { timeout: 40_000 }, async () => {
      const exit = await server.stop();
      server = undefined;
      assert.deepEqual(exit, { code: 0, signal: null });
    });
  });
}

for (const [group, scenarios, expectedLabels] of [
  [DEFAULTS, SCENARIOS, ['stdio', 'streamable HTTP', 'legacy SSE', 'streamable HTTP with auth token', 'legacy SSE with auth token']],
  [SMALL, SMALL_OUTPUT_SCENARIOS, ['stdio', 'streamable HTTP', 'legacy SSE']],
]) {
  describe(`${group}: parity across transports`, () => {
    const results = () => observed.get(group) ?? new Map();
    const reference = 'stdio';

    test('every transport ran the whole scenario set', () => {
      assert.deepEqual([...results().keys()], expectedLabels);
      for (const [label, record] of results()) {
        assert.deepEqual(Object.keys(record.scenarios), scenarios.map((s) => s.name), label);
      }
    });

    test('initialize and tools/list agree', () => {
      const ref = results().get(reference);
      assert.ok(ref, `observed over ${reference}`);
      for (const [label, record] of results()) {
        assert.deepEqual(record.initialize, ref.initialize, `initialize over ${label} vs ${reference}`);
        assert.deepEqual(record.tools, ref.tools, `tools/list over ${label} vs ${reference}`);
      }
    });

    for (const scenario of scenarios) {
      test(`scenario ${scenario.name} agrees`, () => {
        const ref = results().get(reference)?.scenarios[scenario.name];
        assert.ok(ref, `observed over ${reference}`);
        for (const [label, record] of results()) {
          assert.deepEqual(record.scenarios[scenario.name], ref, `${scenario.name} over ${label} vs ${reference}`);
        }
      });
    }
  });
}
