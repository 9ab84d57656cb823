// How each SDK generation takes a task (docs/typescript-sdk.md shows the
// same code): neither SDK knows the extension io.modelcontextprotocol/tasks,
// but both send a request with any _meta and take any result through
// client.request(request, schema). The v1 SDK (@modelcontextprotocol/sdk)
// and the v2 client (@modelcontextprotocol/client) in legacy mode poll a
// call that became a task to its result. The v2 client pinned to
// 2026-07-28 refuses a task result for tools/call (its decoder knows
// resultType "task" for no method): asserted, so that an SDK that learns it
// fails this test and the docs get updated.
// Run from the repository root:
//   node --test tests/client/sdk_tasks.test.mjs
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import * as z from 'zod';

import { serverBin, serverEnvironment } from './mcp_client.mjs';

const TIMEOUT_MS = 60_000;
// A call still running after 1 s becomes a task.
const ENV = { ...serverEnvironment(), MCP_EXEC_TASK_AFTER_S: '1' };
const CODE = 'import time\ntime.sleep(3)\nprint("done")';

// The extension, declared in the request's _meta (in the 2025 era the
// capabilities of initialize do not count for it).
const TASKS = { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
const anyResult = z.looseObject({});

// tools/call, then tasks/get every pollIntervalMs until the task ends: the
// CallToolResult.
async function callAsTask(client) {
  const created = await client.request(
    { method: 'tools/call', params: { name: 'exec', arguments: { code: CODE }, _meta: TASKS } },
    anyResult,
  );
  assert.equal(created.status, 'working', JSON.stringify(created));
  let task = created;
  while (task.status === 'working') {
    await new Promise((resolve) => setTimeout(resolve, created.pollIntervalMs));
    task = await client.request({ method: 'tasks/get', params: { taskId: created.taskId, _meta: TASKS } }, anyResult);
  }
  assert.equal(task.status, 'completed', JSON.stringify(task));
  return task.result;
}

describe('a task through each SDK generation', { timeout: TIMEOUT_MS }, () => {
  it('the v1 SDK polls a call that became a task to its result', async () => {
    const client = new Client({ name: 'sdk-tasks-v1', version: '1' });
    await client.connect(new StdioClientTransport({ command: serverBin, env: ENV, stderr: 'ignore' }));
    try {
      const result = await callAsTask(client);
      assert.equal(result.structuredContent.stdout, 'done\n');
      assert.equal(result.structuredContent.exit_code, 0);
    } finally {
      await client.close();
    }
  });

  it('the v2 client in legacy mode does the same', async () => {
    const client = new ClientV2({ name: 'sdk-tasks-v2', version: '1' }, { versionNegotiation: { mode: 'legacy' } });
    await client.connect(new StdioV2({ command: serverBin, env: ENV, stderr: 'ignore' }));
    try {
      const result = await callAsTask(client);
      assert.equal(result.structuredContent.stdout, 'done\n');
    } finally {
      await client.close();
    }
  });

  it('the v2 client pinned to 2026-07-28 refuses the task result', async () => {
    const client = new ClientV2(
      { name: 'sdk-tasks-v2-pinned', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    );
    await client.connect(new StdioV2({ command: serverBin, env: ENV, stderr: 'ignore' }));
    try {
      await assert.rejects(
        client.request({ method: 'tools/call', params: { name: 'exec', arguments: { code: CODE } } }, anyResult),
        (err) => err.code === 'UNSUPPORTED_RESULT_TYPE' && err.data?.resultType === 'task',
      );
    } finally {
      await client.close();
    }
  });
});
