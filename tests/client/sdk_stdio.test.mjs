// mcp-exec driven by a real MCP client: the official TypeScript SDK's Client
// over StdioClientTransport. Run from the repository root:
//   node --test tests/client/
// (after `npm ci` in tests/client). MCP_EXEC_BIN overrides the server binary.
import assert from 'node:assert/strict';
import { finished } from 'node:stream/promises';
import { after, before, describe, test } from 'node:test';

import { checkTextItem, connectMcpExec } from './mcp_client.mjs';

const TEST_TIMEOUT_MS = 15_000;

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if (err.code === 'ESRCH') return false;
    throw err;
  }
}

function logEvents(text) {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

describe('mcp-exec over stdio with the MCP TypeScript SDK', () => {
  let client;
  let transport;
  let serverLog;

  before(async () => {
    ({ client, transport, serverLog } = await connectMcpExec());
  }, { timeout: 30_000 });

  // A safety net for a failed test: the last test closes the client itself.
  after(async () => {
    await client?.close();
  });

  test('initialize reports the server as mcp-exec', { timeout: TEST_TIMEOUT_MS }, () => {
    const info = client.getServerVersion();
    assert.equal(info.name, 'mcp-exec');
    assert.ok(client.getServerCapabilities()?.tools, 'server advertises the tools capability');
  });

  test('tools/list returns exactly the exec tool with its contract', { timeout: TEST_TIMEOUT_MS }, async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['exec']);
    const [exec] = tools;

    const input = exec.inputSchema;
    assert.equal(input.type, 'object');
    assert.deepEqual(input.required, ['code']);
    assert.equal(input.additionalProperties, false);
    // The contract's three, and ours (optional): the input files, the session.
    assert.deepEqual(Object.keys(input.properties).sort(), [
      'code',
      'end',
      'files',
      'reset',
      'session',
      'stdin',
      'timeout_s',
    ]);
    assert.equal(input.properties.files.type, 'object');
    assert.equal(input.properties.code.type, 'string');
    assert.equal(input.properties.timeout_s.type, 'integer');
    assert.equal(input.properties.stdin.type, 'string');

    const output = exec.outputSchema;
    assert.ok(output, 'exec declares an outputSchema');
    const contract = {
      stdout: 'string',
      stderr: 'string',
      exit_code: 'integer',
      duration_ms: 'integer',
      truncated: 'boolean',
      timed_out: 'boolean',
    };
    assert.deepEqual([...output.required].sort(), Object.keys(contract).sort());
    for (const [field, type] of Object.entries(contract)) {
      assert.equal(output.properties[field]?.type, type, `outputSchema type of ${field}`);
    }
  });

  test('exec runs print(2 + 2)', { timeout: TEST_TIMEOUT_MS }, async () => {
    // The SDK validates structuredContent against the listed outputSchema.
    const result = await client.callTool({ name: 'exec', arguments: { code: 'print(2 + 2)' } });
    assert.equal(result.isError, false);
    const out = result.structuredContent;
    assert.equal(out.stdout, '4\n');
    assert.equal(out.stderr, '');
    assert.equal(out.exit_code, 0);
    assert.equal(out.timed_out, false);
    assert.equal(out.truncated, false);
    assert.equal(result.content[0].type, 'text');
    checkTextItem(result.content[0].text, out);
  });

  test('invalid arguments are a tool error, not a protocol error', { timeout: TEST_TIMEOUT_MS }, async () => {
    const result = await client.callTool({ name: 'exec', arguments: { code: '   ' } });
    assert.equal(result.isError, true);
    assert.equal(result.content[0].type, 'text');
    assert.equal(result.content[0].text, 'code must not be empty');
  });

  test('an unknown tool is a JSON-RPC invalid-params error', { timeout: TEST_TIMEOUT_MS }, async () => {
    await assert.rejects(
      client.callTool({ name: 'no_such_tool', arguments: {} }),
      (err) => {
        assert.equal(err.code, -32602);
        return true;
      },
    );
  });

  test('closing the client ends the server and its Python zygote', { timeout: TEST_TIMEOUT_MS }, async () => {
    const serverPid = transport.pid;
    assert.ok(serverPid, 'server process is running');
    const zygotePid = logEvents(serverLog()).find((e) => e.event === 'zygote_ready')?.pid;
    assert.ok(zygotePid, 'server logged zygote_ready with the zygote pid');

    // The SDK's close() ends the server's stdin, waits up to 2 s for it to
    // exit, then escalates to SIGTERM: finishing well inside that window means
    // the server stopped on EOF by itself.
    const started = performance.now();
    await client.close();
    const closeMs = performance.now() - started;
    await finished(transport.stderr);

    assert.ok(closeMs < 2000, `server exited on stdin EOF within 2 s (took ${Math.round(closeMs)} ms)`);
    assert.equal(isAlive(serverPid), false, 'server process is gone');
    assert.equal(isAlive(zygotePid), false, 'zygote process is gone');
    const events = logEvents(serverLog());
    assert.equal(events.find((e) => e.event === 'stdio_stopping')?.reason, 'eof');
    assert.equal(events.find((e) => e.event === 'stopped')?.exit_status, 0);
  });
});
