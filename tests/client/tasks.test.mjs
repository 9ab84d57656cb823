// Long calls as tasks (the extension io.modelcontextprotocol/tasks): a
// tools/call from a client that declared the extension, still running after
// MCP_EXEC_TASK_AFTER_S, is answered with a task (resultType "task") and
// polled with tasks/get to the very result a plain call gives; tasks/cancel
// ends the run and keeps its output; a client that did not declare it is
// answered in place, and refused tasks/get (-32021). Over stdio and
// streamable HTTP, in both protocol eras (the capability in the request's
// _meta; in 2025 initialize's alone does not count), for one-shot runs and
// session cells; a task outlives its HTTP session; MCP_EXEC_MAX_TASKS and
// the TTL bound them. Raw JSON-RPC (raw_client.mjs): the official SDKs do
// not take a task result yet (the v2 client's decoder refuses resultType
// "task" for tools/call).
// Run from the repository root:
//   node --test tests/client/tasks.test.mjs
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { brief, startHttpServer } from './mcp_client.mjs';
import { TASKS, WITH_TASKS, rawHttp, rawStdio } from './raw_client.mjs';

const TIMEOUT_MS = 120_000;
// Settings these tests count on; an inherited one is removed.
const DEFAULTS = {
  MCP_EXEC_TASK_AFTER_S: undefined,
  MCP_EXEC_MAX_TASKS: undefined,
  MCP_EXEC_RESOURCE_TTL_S: undefined,
  MCP_EXEC_MAX_CONCURRENT: '4',
};

// Twelve seconds of a run that prints as it goes.
const TWELVE_SECONDS =
  'import time\nfor i in range(4):\n    print("tick", i, flush=True)\n    time.sleep(3)\nprint("done")';

// What two runs of the same code share: the result without its timings.
function timeless(result) {
  assert.ok(result && Array.isArray(result.content), brief(result));
  const strip = (o) => {
    const { duration_ms, queue_ms, ...rest } = o;
    return rest;
  };
  const { _meta, ...rest } = result;
  return {
    ...rest,
    structuredContent: strip(result.structuredContent),
    content: result.content.map((c) => (c.type === 'text' ? { ...c, text: JSON.stringify(strip(JSON.parse(c.text))) } : c)),
  };
}

function assertTask(created, label) {
  assert.equal(created.resultType, 'task', `${label}: ${brief(created)}`);
  assert.equal(created.status, 'working');
  assert.match(created.taskId, /^[A-Za-z0-9_-]{22}$/, 'an id of 128 random bits');
  assert.ok(Number.isInteger(created.ttlMs) && created.ttlMs > 0, brief(created));
  assert.ok(Number.isInteger(created.pollIntervalMs) && created.pollIntervalMs > 0, brief(created));
  assert.ok(!Number.isNaN(Date.parse(created.createdAt)), brief(created));
  assert.equal(created.content, undefined, 'a task is not a CallToolResult');
}

// A 12-second call from a client with the extension and the same call from
// one without, at once: a task polled to the result the plain call gives.
async function taskMatchesPlainCall(withTasks, without, era) {
  const started = Date.now();
  const plain = without.callTool({ code: TWELVE_SECONDS });
  const created = await withTasks.callTool({ code: TWELVE_SECONDS });
  const answeredAfter = Date.now() - started;
  assertTask(created, era);
  assert.ok(answeredAfter >= 4_000 && answeredAfter < 11_000, `answered after ${answeredAfter} ms (MCP_EXEC_TASK_AFTER_S 5)`);
  const messages = [];
  const task = await withTasks.pollTask(created.taskId, { onPoll: (t) => messages.push(t.statusMessage) });
  assert.equal(task.status, 'completed', brief(task));
  assert.equal(task.resultType, 'complete');
  assert.equal(task.taskId, created.taskId);
  assert.ok(
    messages.some((m) => /running for \d+ s; newest output: .*tick/s.test(m)),
    `progress in the status message: ${JSON.stringify(messages)}`,
  );
  const inPlace = await plain;
  assert.notEqual(inPlace.resultType, 'task', 'a client without the extension is answered in place');
  assert.equal(inPlace.structuredContent.stdout, 'tick 0\ntick 1\ntick 2\ntick 3\ndone\n', brief(inPlace));
  assert.deepEqual(timeless(task.result), timeless(inPlace));
  // The task's id is no use to a client that did not declare the extension.
  const refused = await without.request('tasks/get', { taskId: created.taskId });
  assert.equal(refused.error?.code, -32021, brief(refused));
  assert.deepEqual(refused.error.data, { requiredCapabilities: { extensions: { [TASKS]: {} } } });
  // Polled again, the ended task says the same.
  assert.deepEqual((await withTasks.call('tasks/get', { taskId: created.taskId })).result, task.result);
  if (era === 'legacy') {
    // The extension decides per request: initialize's declaration alone
    // does not make a task, nor reach one.
    const plainRequest = await withTasks.bare('tasks/get', { taskId: created.taskId });
    assert.equal(plainRequest.error?.code, -32021, brief(plainRequest));
    const inPlace2 = await withTasks.bare('tools/call', { name: 'exec', arguments: { code: 'import time; time.sleep(6); print(6)' } });
    assert.equal(inPlace2.result?.structuredContent?.stdout, '6\n', brief(inPlace2));
  }
}

describe('a 12-second call from a tasks-aware client', { timeout: TIMEOUT_MS }, () => {
  for (const era of ['stateless', 'legacy']) {
    it(`over stdio, ${era} era: a task polled to the plain call's result`, async () => {
      const withTasks = await rawStdio({ era, capabilities: WITH_TASKS, env: DEFAULTS });
      const without = await rawStdio({ era, env: DEFAULTS });
      try {
        if (era === 'stateless') {
          const discover = await withTasks.call('server/discover');
          assert.deepEqual(discover.capabilities.extensions, { [TASKS]: {} }, brief(discover));
        }
        await taskMatchesPlainCall(withTasks, without, era);
      } finally {
        await withTasks.close();
        await without.close();
      }
    });
  }

  it('over streamable HTTP, both eras: tasks polled to the plain calls\' results', async () => {
    const server = await startHttpServer({ env: DEFAULTS });
    try {
      const legacy = await rawHttp(server, { era: 'legacy', capabilities: WITH_TASKS });
      const legacyPlain = await rawHttp(server, { era: 'legacy' });
      const stateless = await rawHttp(server, { era: 'stateless', capabilities: WITH_TASKS });
      const statelessPlain = await rawHttp(server, { era: 'stateless' });
      await Promise.all([
        taskMatchesPlainCall(legacy, legacyPlain, 'legacy'),
        taskMatchesPlainCall(stateless, statelessPlain, 'stateless'),
      ]);
      await legacy.close();
      await legacyPlain.close();
    } catch (err) {
      err.message += `\nserver stderr:\n${server.log()}`;
      throw err;
    } finally {
      await server.stop();
    }
  });
});

describe('tasks', { timeout: TIMEOUT_MS }, () => {
  const QUICK = { ...DEFAULTS, MCP_EXEC_TASK_AFTER_S: '1' };
  // Ticks for a minute unless it is ended.
  const TICKING = 'import time\nfor i in range(300):\n    print("tick", i, flush=True)\n    time.sleep(0.2)';

  for (const era of ['stateless', 'legacy']) {
    it(`tasks/cancel ends the run and keeps its output (stdio, ${era} era)`, async () => {
      const client = await rawStdio({ era, capabilities: WITH_TASKS, env: QUICK });
      try {
        const created = await client.callTool({ code: TICKING });
        assertTask(created, era);
        await new Promise((r) => setTimeout(r, 1_500));
        const ack = await client.call('tasks/cancel', { taskId: created.taskId });
        assert.equal(ack.resultType, 'complete', brief(ack));
        // Answered once the run had ended: the status has changed already.
        const task = await client.call('tasks/get', { taskId: created.taskId });
        assert.equal(task.status, 'cancelled', brief(task));
        // A task that ended is not cancelled again, and the error says so.
        const again = await client.request('tasks/cancel', { taskId: created.taskId });
        assert.equal(again.error?.code, -32602, brief(again));
        assert.match(again.error.message, /already ended \(status cancelled\)/);
        const sc = task.result.structuredContent;
        assert.equal(sc.reason, 'cancelled', brief(task.result));
        assert.match(sc.stdout, /^tick 0\ntick 1\n/, 'the output so far is kept');
        assert.ok(sc.duration_ms < 20_000, `the run was ended: ${sc.duration_ms} ms`);
        // The runner is gone: the server takes a new call at once.
        const next = await client.callTool({ code: 'print("after")' });
        assert.equal(next.structuredContent.stdout, 'after\n', brief(next));
        // Unknown ids are -32602 for every method of the extension.
        for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
          const unknown = await client.request(method, { taskId: 'AAAAAAAAAAAAAAAAAAAAAA', inputResponses: {} });
          assert.equal(unknown.error?.code, -32602, `${method}: ${brief(unknown)}`);
        }
      } catch (err) {
        err.message += `\nserver stderr:\n${client.log}`;
        throw err;
      } finally {
        await client.close();
      }
    });
  }

  it('a task outlives its HTTP session, and session cells run as tasks', async () => {
    const server = await startHttpServer({ env: QUICK });
    try {
      // 2025: a named session of this connection; the task's cell ends, and
      // the connection may go before it does.
      const a = await rawHttp(server, { era: 'legacy', capabilities: WITH_TASKS });
      const cell = await a.callTool({ code: 'import time\nx = 41\ntime.sleep(3)\nprint("slept")', session: 'nb' });
      assertTask(cell, 'legacy cell');
      const first = await a.pollTask(cell.taskId);
      assert.equal(first.result.structuredContent.stdout, 'slept\n', brief(first));
      assert.equal(first.result.structuredContent.session, 'nb');
      const again = await a.callTool({ code: 'print(x + 1)', session: 'nb' });
      assert.equal(again.structuredContent.stdout, '42\n', brief(again));

      const long = await a.callTool({ code: 'import time\ntime.sleep(4)\nprint("outlived")' });
      assertTask(long, 'legacy');
      await a.close(); // DELETE: the session is gone, its task is not
      const b = await rawHttp(server, { era: 'legacy', capabilities: WITH_TASKS });
      const outlived = await b.pollTask(long.taskId);
      assert.equal(outlived.status, 'completed', brief(outlived));
      assert.equal(outlived.result.structuredContent.stdout, 'outlived\n');
      await b.close();

      // 2026-07-28: a handle's cell as a task, polled from other POSTs.
      const s = await rawHttp(server, { era: 'stateless', capabilities: WITH_TASKS });
      const made = await s.callTool({ code: 'import time\ny = 6 * 7\ntime.sleep(3)', session: 'new' });
      assertTask(made, 'stateless cell');
      const done = await s.pollTask(made.taskId);
      const handle = done.result.structuredContent.session;
      assert.ok(handle && handle !== 'new', brief(done));
      const reuse = await s.callTool({ code: 'print(y)', session: handle });
      assert.equal(reuse.structuredContent.stdout, '42\n', brief(reuse));
    } catch (err) {
      err.message += `\nserver stderr:\n${server.log()}`;
      throw err;
    } finally {
      await server.stop();
    }
  });

  it('MCP_EXEC_MAX_TASKS bounds them, an ended task expires with its TTL, SIGTERM ends a working one', async () => {
    const server = await startHttpServer({
      env: { ...QUICK, MCP_EXEC_MAX_TASKS: '1', MCP_EXEC_RESOURCE_TTL_S: '10', MCP_EXEC_SHUTDOWN_GRACE_S: '3' },
    });
    try {
      const c = await rawHttp(server, { era: 'stateless', capabilities: WITH_TASKS });
      const code = 'import time\ntime.sleep(3)\nprint("three")';
      const answers = await Promise.all([c.callTool({ code }), c.callTool({ code })]);
      const tasks = answers.filter((a) => a.resultType === 'task');
      const inPlace = answers.filter((a) => a.resultType !== 'task');
      assert.equal(tasks.length, 1, `one task, one answered in place: ${answers.map(brief).join('\n')}`);
      assert.equal(inPlace[0].structuredContent.stdout, 'three\n');
      const task = await c.pollTask(tasks[0].taskId);
      assert.equal(task.status, 'completed');
      const metrics = await (await fetch(new URL('/metrics', server.origin))).text();
      assert.match(metrics, /^mcp_exec_tasks 1$/m, 'the ended task is held');
      assert.ok(task.ttlMs >= 10_000 && task.ttlMs < 20_000, `an ended task lasts MCP_EXEC_RESOURCE_TTL_S: ${task.ttlMs}`);
      await new Promise((r) => setTimeout(r, Date.parse(task.createdAt) + task.ttlMs - Date.now() + 500));
      const expired = await c.request('tasks/get', { taskId: task.taskId });
      assert.equal(expired.error?.code, -32602, brief(expired));
      assert.match(expired.error.message, /no such task .*kept 10 s after its run ends/);
      // Room again: the next long call is a task. SIGTERM gives its run the
      // shutdown grace (3 s here), during which it is still polled (other
      // requests get 503), then ends it instead of waiting a minute.
      const working = await c.callTool({ code: 'import time\ntime.sleep(60)' });
      assertTask(working, 'after expiry');
      const stopped = Date.now();
      const exiting = server.stop();
      await new Promise((r) => setTimeout(r, 1_000));
      const during = await c.call('tasks/get', { taskId: working.taskId });
      assert.equal(during.status, 'working', brief(during));
      const refused = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
      assert.equal(refused.status, 503, 'nothing new while it drains');
      const exit = await exiting;
      assert.equal(exit.code, 0, JSON.stringify(exit));
      const took = Date.now() - stopped;
      assert.ok(took >= 3_000 && took < 20_000, `stopped in ${took} ms (grace 3 s)`);
      // Both tasks ended, the second by the stop.
      assert.equal(server.log().match(/"event":"task_created"/g)?.length, 2, 'two tasks created');
      assert.equal(server.log().match(/"event":"task_ended"/g)?.length, 2, 'both ended');
    } catch (err) {
      err.message += `\nserver stderr:\n${server.log()}`;
      throw err;
    } finally {
      await server.stop().catch(() => {});
    }
  });

  it('MCP_EXEC_MAX_TASKS=0: no extension advertised, every call answered in place', async () => {
    const client = await rawStdio({ era: 'stateless', capabilities: WITH_TASKS, env: { ...QUICK, MCP_EXEC_MAX_TASKS: '0' } });
    try {
      const discover = await client.call('server/discover');
      assert.equal(discover.capabilities.extensions, undefined, brief(discover));
      const r = await client.callTool({ code: 'import time\ntime.sleep(2)\nprint("in place")' });
      assert.equal(r.structuredContent.stdout, 'in place\n', brief(r));
    } finally {
      await client.close();
    }
  });
});
