// Live Python sessions (the exec tool's `session` and `reset` arguments)
// through the official MCP TypeScript SDK client, on all three transports of
// mcp-exec (stdio, streamable HTTP, legacy HTTP+SSE): state and files kept
// across calls, nothing shared across names, connections or one-shot runs,
// reset, timeouts and cancellation as KeyboardInterrupt, a cell that ignores
// it, SystemExit and os._exit, calls run in arrival order, the lockdown
// layers in every cell, and the session's processes gone when its connection
// ends. Then, on small servers of their own: idle expiry, the
// MCP_EXEC_MAX_PY_SESSIONS bound, MCP_EXEC_PY_SESSION_INTERRUPT_MS, HTTP
// session expiry and /metrics.
// One server per transport, shared by that transport's tests, which run in
// order. The tests read the host's /proc for the sessions' processes (run as
// root on Linux). Run from the repository root:
//   node --test tests/client/sessions.test.mjs
// MCP_EXEC_BIN overrides the server binary.
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';

import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

import {
  brief,
  connectHttpClient,
  connectMcpExec,
  ok,
  startHttpServer,
  toolError,
} from './mcp_client.mjs';

const SETUP_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 40_000;
const CALL_TIMEOUT_MS = 25_000;
// How long a call that must be answered at once (a refusal, a look at a
// session's state) may take before the test calls it a hang.
const QUICK_CALL_MS = 10_000;
// How long the sessions' processes may outlive the end of their connection.
const GONE_WITHIN_MS = 10_000;

// The session settings these tests count on are the defaults: an inherited
// MCP_EXEC_* setting for one of them is removed.
const DEFAULT_ENV = Object.fromEntries(
  [
    'MCP_EXEC_MAX_PY_SESSIONS',
    'MCP_EXEC_PY_SESSION_IDLE_S',
    'MCP_EXEC_PY_SESSION_MAX_S',
    'MCP_EXEC_PY_SESSION_INTERRUPT_MS',
    'MCP_EXEC_SESSION_IDLE_S',
    'MCP_EXEC_MAX_CONCURRENT',
    'MCP_EXEC_MAX_QUEUE',
    'MCP_EXEC_MAX_TIMEOUT_S',
    'MCP_EXEC_DEFAULT_TIMEOUT_S',
  ].map((name) => [name, undefined]),
);

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------
// Servers and connections. A server is { kind, origin, connect(), stop() };
// connect() opens one more MCP connection to it and returns
// { client, transport, log(), end() }: end() ends the connection the way a
// client does (stdio: close stdin; streamable HTTP: DELETE the MCP session;
// SSE: close the stream). Over stdio each connection is a server process of
// its own.

async function connectStdio(env) {
  const { client, transport, serverLog } = await connectMcpExec({ clientName: 'sessions-stdio', env });
  let ended = false;
  return {
    client,
    transport,
    log: serverLog,
    async end() {
      if (ended) return;
      ended = true;
      await client.close();
    },
  };
}

async function connectHttp(server) {
  const { client, transport } = await connectHttpClient(server, { clientName: `sessions-${server.transport}` });
  let ended = false;
  return {
    client,
    transport,
    log: server.log,
    async end() {
      if (ended) return;
      ended = true;
      if (server.transport === 'http') await transport.terminateSession();
      await client.close();
    },
  };
}

async function startServer(kind, env = {}) {
  const settings = { ...DEFAULT_ENV, ...env };
  if (kind === 'stdio') {
    return { kind, origin: null, connect: () => connectStdio(settings), stop: async () => null };
  }
  const server = await startHttpServer({ transport: kind, env: settings });
  return { kind, origin: server.origin, log: server.log, connect: () => connectHttp(server), stop: () => server.stop() };
}

const TRANSPORTS = [
  { label: 'stdio', kind: 'stdio' },
  { label: 'streamable HTTP', kind: 'http' },
  { label: 'legacy SSE', kind: 'sse' },
];

// ---------------------------------------------------------------------------
// Calls and checks.

function call(ctx, args, options = {}) {
  return ctx.client.callTool({ name: 'exec', arguments: args }, CallToolResultSchema, {
    timeout: CALL_TIMEOUT_MS,
    ...options,
  });
}

// A call that must be answered at once.
const quick = (ctx, args) => call(ctx, args, { timeout: QUICK_CALL_MS });


// A session call that ran cleanly: exit 0, in session `name`; `fresh` says
// whether it must have started the interpreter. Returns the structured result.
function cell(result, name, fresh) {
  const { out } = ok(result);
  assert.equal(out.session, name, `the result names the session: ${brief(out)}`);
  assert.equal(out.session_new, fresh, `session_new is ${fresh}: ${brief(out)}`);
  assert.equal(out.exit_code, 0, `exit 0: ${brief(out)}`);
  assert.equal('session_ended' in out, false, `the session goes on: ${brief(out)}`);
  return out;
}

// Polls fn() until it returns a truthy value; fails with what() past ms.
async function waitFor(fn, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) assert.fail(`${typeof what === 'function' ? what() : what} (waited ${ms} ms)`);
    await delay(100);
  }
}

// ---------------------------------------------------------------------------
// The host's view of the sessions' processes: a `sleep N` with a number no
// other process carries marks a session's background process.

const newMarker = () => String(3_000_000_000 + randomInt(1, 999_999_999));

// The host pids whose command line is `sleep <marker>`.
function hostPidsOf(marker) {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (argv[0]?.endsWith('sleep') && argv[1] === marker) found.push(Number(name));
    } catch {
      // the process is gone
    }
  }
  return found;
}

function hostUid(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)[1]);
  } catch {
    return null;
  }
}

// Python: start `sleep <marker>` in the background and keep its Popen.
const startSleeper = (marker) =>
  `import subprocess\nsleeper = subprocess.Popen(["sleep", "${marker}"])\nsleeper.pid > 0`;

// Python: the pids, as this sandbox sees them, of `sleep <marker>`.
const findSleeper = (marker) =>
  'import os\nfound = []\nfor pid in os.listdir("/proc"):\n    if pid.isdigit():\n' +
  '        try:\n            with open(f"/proc/{pid}/cmdline", "rb") as f:\n' +
  '                argv = f.read().split(b"\\0")\n' +
  `            if argv[0].endswith(b"sleep") and argv[1:2] == [b"${marker}"]:\n` +
  '                found.append(int(pid))\n        except OSError:\n            pass\nfound';

// Starts a sleeper in the session and checks that the host sees it, as a
// process of a sandbox uid (not root). Returns the marker.
async function sleeperIn(ctx, session, { fresh } = {}) {
  const marker = newMarker();
  const out = ok(await call(ctx, { session, code: startSleeper(marker) })).out;
  assert.equal(out.exit_code, 0, brief(out));
  if (fresh !== undefined) assert.equal(out.session_new, fresh, brief(out));
  const pids = await waitFor(() => hostPidsOf(marker).length > 0 && hostPidsOf(marker), 5000, `the host sees sleep ${marker}`);
  for (const pid of pids) {
    const uid = hostUid(pid);
    assert.ok(uid !== null && uid !== 0, `sleep ${marker} (pid ${pid}) runs as a sandbox uid, not ${uid}`);
  }
  return marker;
}

const waitGone = (marker, why) =>
  waitFor(
    () => hostPidsOf(marker).length === 0,
    GONE_WITHIN_MS,
    () => `sleep ${marker} is gone from the host after ${why}; still there: ${JSON.stringify(hostPidsOf(marker))}`,
  );

// ---------------------------------------------------------------------------
// /metrics over HTTP.

async function metrics(origin) {
  const res = await fetch(`${origin}/metrics`, { signal: AbortSignal.timeout(5000) });
  assert.equal(res.status, 200);
  const text = await res.text();
  const value = (re) => {
    const m = text.match(re);
    assert.ok(m, `/metrics has ${re}:\n${text}`);
    return Number(m[1]);
  };
  const ends = {};
  for (const reason of ['reset', 'idle', 'lifetime', 'connection_closed', 'interpreter_ended', 'shutdown', 'evicted', 'ended_by_call']) {
    ends[reason] = value(new RegExp(`^mcp_exec_py_session_ends_total\\{reason="${reason}"\\} (\\d+)$`, 'm'));
  }
  return {
    live: value(/^mcp_exec_py_sessions (\d+)$/m),
    starts: value(/^mcp_exec_py_session_starts_total (\d+)$/m),
    ends,
    evictions: value(/^mcp_exec_session_evictions_total\{table="python"\} (\d+)$/m),
    refusals: value(/^mcp_exec_session_refusals_total\{table="python"\} (\d+)$/m),
  };
}

// ---------------------------------------------------------------------------
// Code used below.

// What the lockdown lets a run do, as JSON: an IPv4 connection to a
// listener on 127.0.0.1, a write under /etc, the uid, and the seccomp,
// no_new_privs and effective capabilities of the process.
const lockdownProbe = (port) => `import errno, json, os, socket
out = {}
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(("127.0.0.1", ${port}))
    out["inet"] = "connected"
except OSError as e:
    out["inet"] = errno.errorcode.get(e.errno, str(e))
try:
    with open("/etc/mcp-exec-session-probe", "w") as f:
        f.write("x")
    out["etc"] = "written"
except OSError as e:
    out["etc"] = errno.errorcode.get(e.errno, str(e))
out["uid"] = os.getuid()
status = {}
for line in open("/proc/self/status"):
    key, _, value = line.partition(":")
    status[key] = value.strip()
out["seccomp"] = status["Seccomp"]
out["nnp"] = status["NoNewPrivs"]
out["capeff"] = status["CapEff"]
print(json.dumps(out))`;

const IGNORES_INTERRUPT = 'import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass';
// A loop in C that never checks for signals (unlike re, whose matcher does).
const LOOPS_IN_C = 'import collections, itertools\ncollections.deque(itertools.count(), maxlen=0)';

const BAD_NAMES = ['bad name', '', 'x'.repeat(65), 'a/b', '../up', 'naïve', 'semi;colon', 'new\nline'];

// ---------------------------------------------------------------------------
// The tests, once per transport.

for (const { label, kind } of TRANSPORTS) {
  describe(`sessions over ${label}`, () => {
    let server;
    let a; // the main connection
    let b; // a second connection to the same server (stdio: a second server)
    let listener; // something listening on 127.0.0.1, for the lockdown probe
    const extra = []; // connections a test opened
    const transportErrors = [];

    before(async () => {
      listener = net.createServer((socket) => socket.destroy());
      await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
      // More places than these tests take, whatever the machine's memory.
      server = await startServer(kind, { MCP_EXEC_MAX_PY_SESSIONS: '32' });
      a = await server.connect();
      b = await server.connect();
      for (const ctx of [a, b]) {
        ctx.client.onerror = (err) => transportErrors.push(String(err?.stack ?? err));
        // listTools caches the output schema: from here on the SDK validates
        // every structuredContent against it.
        await ctx.client.listTools();
      }
    }, { timeout: SETUP_TIMEOUT_MS });

    after(async () => {
      for (const ctx of [...extra, b, a]) await ctx?.end().catch(() => {});
      await server?.stop().catch(() => {});
      listener?.close();
    });

    const it = (name, fn) =>
      test(name, { timeout: TEST_TIMEOUT_MS }, async () => {
        try {
          await fn();
        } catch (err) {
          err.message += `\n(over ${label})`;
          throw err;
        }
      });

    // A connection of this test's own, ended by after() if the test does not.
    const connectExtra = async () => {
      const ctx = await server.connect();
      extra.push(ctx);
      await ctx.client.listTools();
      return ctx;
    };

    // --- 1. State and files persist --------------------------------------------

    let cwd;

    it('a variable, an import, a function and a file persist; session_new true, then false', async () => {
      const first = cell(
        await call(a, {
          session: 'state',
          code: 'import json as j\nimport os\nx = 41\ndef f(v):\n    return v + 1\nopen("kept.txt", "w").write("kept")\nos.getcwd()',
        }),
        'state',
        true,
      );
      assert.match(first.result, /^'\/[^']*'$/, 'the working directory is an absolute path');
      cwd = first.result.slice(1, -1);

      const second = cell(
        await call(a, { session: 'state', code: '(f(x), j.dumps([1]), open("kept.txt").read(), os.getcwd())' }),
        'state',
        false,
      );
      assert.equal(second.result, `(42, '[1]', 'kept', '${cwd}')`);

      const third = cell(await call(a, { session: 'state', code: 'x += 1\nprint(x)' }), 'state', false);
      assert.equal(third.stdout, '42\n');
    });

    it('a one-shot call has no session fields', async () => {
      const { out } = ok(await call(a, { code: '1 + 1' }));
      assert.equal(out.result, '2');
      for (const field of ['session', 'session_new', 'session_ended']) {
        assert.equal(field in out, false, `no ${field}: ${brief(out)}`);
      }
    });

    // --- 2. Nothing shared -------------------------------------------------------

    it('another name is another interpreter: no variable, no file, no processes of the first', async () => {
      const marker = await sleeperIn(a, 'state', { fresh: false });
      try {
        // The first session sees its own sleeper (the check below can fail).
        const own = cell(await call(a, { session: 'state', code: findSleeper(marker) }), 'state', false);
        assert.notEqual(own.result, '[]', `the session sees its own sleeper: ${brief(own)}`);

        const other = cell(
          await call(a, {
            session: 'state-other',
            code:
              'import os\n("x" in globals(), "f" in globals(), os.path.exists("kept.txt"), ' +
              `os.path.exists(${JSON.stringify(`${cwd}/kept.txt`)}))`,
          }),
          'state-other',
          true,
        );
        assert.equal(other.result, '(False, False, False, False)');
        const seen = cell(await call(a, { session: 'state-other', code: findSleeper(marker) }), 'state-other', false);
        assert.equal(seen.result, '[]', 'another session does not see the first one\'s processes');

        const oneShot = ok(await call(a, { code: findSleeper(marker) })).out;
        assert.equal(oneShot.result, '[]', 'a one-shot run does not see the session\'s processes');

        // And the first one still has its state.
        const back = cell(await call(a, { session: 'state', code: 'x' }), 'state', false);
        assert.equal(back.result, '42');
      } finally {
        await call(a, { session: 'state', code: 'sleeper.kill()\nsleeper.wait()' }).catch(() => {});
      }
      await waitGone(marker, 'sleeper.kill()');
    });

    it('a one-shot call sees neither the session\'s variables nor its files', async () => {
      const mark = `marker-${newMarker()}.txt`;
      const write = `open(${JSON.stringify(mark)}, "w").write("m")\nsecret = 1`;
      cell(await call(a, { session: 'state', code: write }), 'state', false);
      const { out } = ok(
        await call(a, {
          code:
            'import os\n' +
            `("x" in globals(), "secret" in globals(), os.path.exists(${JSON.stringify(mark)}), ` +
            `os.path.exists(${JSON.stringify(`${cwd}/${mark}`)}), os.path.exists("kept.txt"))`,
        }),
      );
      assert.equal(out.exit_code, 0, brief(out));
      assert.equal(out.result, '(False, False, False, False, False)');
      // A one-shot run's files do not show up in the session either.
      ok(await call(a, { code: 'open("from-one-shot.txt", "w").write("o")' }));
      const back = cell(
        await call(a, {
          session: 'state',
          code: `(os.path.exists(${JSON.stringify(mark)}), os.path.exists("from-one-shot.txt"))`,
        }),
        'state',
        false,
      );
      assert.equal(back.result, '(True, False)');
    });

    it('the same name on another connection is another interpreter', async () => {
      const other = cell(
        await call(b, { session: 'state', code: 'import os\n("x" in globals(), os.path.exists("kept.txt"))' }),
        'state',
        true,
      );
      assert.equal(other.result, '(False, False)');
      cell(await call(b, { session: 'state', code: 'x = "b"' }), 'state', false);
      const mine = cell(await call(a, { session: 'state', code: 'x' }), 'state', false);
      assert.equal(mine.result, '42', 'the first connection keeps its own x');
      const theirs = cell(await call(b, { session: 'state', code: 'x' }), 'state', false);
      assert.equal(theirs.result, "'b'");
    });

    // --- 3. reset ----------------------------------------------------------------

    it('reset: the state and the files are gone, session_new is true', async () => {
      const fresh = cell(
        await call(a, {
          session: 'state',
          reset: true,
          code: 'import os\n("x" in globals(), "f" in globals(), "j" in globals(), os.path.exists("kept.txt"))',
        }),
        'state',
        true,
      );
      assert.equal(fresh.result, '(False, False, False, False)');
      cell(await call(a, { session: 'state', code: 'y = 1' }), 'state', false);
      const next = cell(await call(a, { session: 'state', code: 'y' }), 'state', false);
      assert.equal(next.result, '1');
      // The other connection's session of that name is untouched.
      const theirs = cell(await call(b, { session: 'state', code: 'x' }), 'state', false);
      assert.equal(theirs.result, "'b'");
    });

    it('reset: false is an ordinary call of the session', async () => {
      const out = cell(await call(a, { session: 'state', reset: false, code: 'y' }), 'state', false);
      assert.equal(out.result, '1');
    });

    // --- 4. Timeout and cancellation -------------------------------------------------

    it('a timeout raises KeyboardInterrupt in the cell and keeps the state', async () => {
      cell(await call(a, { session: 'timeout', code: 'x = 41' }), 'timeout', true);
      const { out } = ok(
        await call(a, { session: 'timeout', timeout_s: 1, code: 'x += 1\nimport time\ntime.sleep(30)\nx = 0' }),
      );
      assert.equal(out.timed_out, true, brief(out));
      assert.equal(out.reason, 'timeout');
      assert.equal(out.exit_code, -1);
      assert.equal(out.session, 'timeout');
      assert.equal(out.session_new, false);
      assert.equal('session_ended' in out, false, `the session goes on: ${brief(out)}`);
      assert.ok(out.stderr.includes('KeyboardInterrupt'), `a KeyboardInterrupt traceback: ${out.stderr}`);
      assert.ok(out.stderr.includes('cell2.py'), `the traceback names cell2.py: ${out.stderr}`);
      const next = cell(await quick(a, { session: 'timeout', code: 'x' }), 'timeout', false);
      assert.equal(next.result, '42', 'the lines before the timeout ran, the one after did not');
    });

    it('an MCP cancellation raises KeyboardInterrupt in the cell; the next call sees the state', async () => {
      cell(await call(a, { session: 'cancel', code: 'x = 7' }), 'cancel', true);
      const controller = new AbortController();
      const pending = call(
        a,
        {
          session: 'cancel',
          code:
            'import time\nprint("started", flush=True)\ntry:\n    time.sleep(60)\n    done = True\n' +
            'except KeyboardInterrupt:\n    caught = True\n    raise',
        },
        {
          signal: controller.signal,
          // The first progress notification says the cell is running.
          onprogress: () => controller.abort('the test cancels'),
        },
      );
      await assert.rejects(pending, (err) => /the test cancels/.test(String(err)), 'the SDK rejects the cancelled call');
      // Were the cell not interrupted, this call would wait behind its 60 s.
      const next = cell(
        await quick(a, { session: 'cancel', code: '(x, "done" in globals(), globals().get("caught"))' }),
        'cancel',
        false,
      );
      assert.equal(next.result, '(7, False, True)');
    });

    // --- 5. Cells that end the interpreter, or do not --------------------------------

    it('a cell that ignores KeyboardInterrupt ends the session, with why; the next call is new', async () => {
      cell(await call(a, { session: 'stubborn', code: 'x = 1' }), 'stubborn', true);
      const { out } = ok(await call(a, { session: 'stubborn', timeout_s: 1, code: IGNORES_INTERRUPT }));
      assert.equal(out.timed_out, true, brief(out));
      assert.equal(out.reason, 'timeout');
      assert.equal(out.exit_code, -1);
      assert.equal(out.session, 'stubborn');
      assert.equal(out.session_new, false);
      assert.equal(typeof out.session_ended, 'string', `session_ended says why: ${brief(out)}`);
      assert.ok(out.session_ended.includes('did not stop within'), out.session_ended);
      const next = cell(await quick(a, { session: 'stubborn', code: '"x" in globals()' }), 'stubborn', true);
      assert.equal(next.result, 'False');
    });

    it('SystemExit ends the cell with its status, not the session', async () => {
      cell(await call(a, { session: 'exits', code: 'x = 5' }), 'exits', true);
      const { out } = ok(await call(a, { session: 'exits', code: 'print("bye")\nraise SystemExit(4)' }));
      assert.equal(out.exit_code, 4, brief(out));
      assert.equal(out.stdout, 'bye\n');
      assert.equal(out.session_new, false);
      assert.equal('session_ended' in out, false, `the session goes on: ${brief(out)}`);
      const next = cell(await call(a, { session: 'exits', code: 'x' }), 'exits', false);
      assert.equal(next.result, '5');
    });

    it('os._exit(3) ends the interpreter: exit_code 3, session_ended says so, the next call is new', async () => {
      const { out } = ok(await call(a, { session: 'exits', code: 'import os\nos._exit(3)' }));
      assert.equal(out.exit_code, 3, brief(out));
      assert.equal(out.session, 'exits');
      assert.equal(out.session_new, false);
      assert.equal(typeof out.session_ended, 'string', `session_ended: ${brief(out)}`);
      assert.ok(out.session_ended.includes('exited with status 3'), out.session_ended);
      const next = cell(await call(a, { session: 'exits', code: '"x" in globals()' }), 'exits', true);
      assert.equal(next.result, 'False');
    });

    // --- 6. Names and arguments ---------------------------------------------------

    it('a bad name is a tool error naming it; reset without a session too', async () => {
      const failures = [];
      for (const name of BAD_NAMES) {
        try {
          const text = toolError(await quick(a, { session: name, code: 'print("ran")' }));
          assert.ok(text.includes('is not a valid name'), `says it is not a valid name: ${text}`);
          assert.ok(text.includes(JSON.stringify(name)), `names ${JSON.stringify(name)}: ${text}`);
        } catch (err) {
          failures.push(`${JSON.stringify(name)}: ${err.message}`);
        }
      }
      assert.deepEqual(failures, []);
      assert.ok(toolError(await quick(a, { reset: true, code: 'print("ran")' })).includes('reset needs a session'));
      assert.ok(toolError(await quick(a, { session: 5, code: 'print("ran")' })).includes('session must be a string'));
      assert.ok(toolError(await quick(a, { session: 's', reset: 'yes', code: '1' })).includes('reset must be a boolean'));
    });

    it('names of 1 and 64 characters of A-Z a-z 0-9 . _ - are good', async () => {
      for (const name of ['Z', 'aZ09._-', 'n'.repeat(64)]) {
        const out = cell(await call(a, { session: name, code: '1' }), name, true);
        assert.equal(out.result, '1');
      }
    });

    // --- 7. Results in a session ---------------------------------------------------

    it('files input, figures, out/ files and result work in a session; nothing is sent twice', async () => {
      const first = ok(
        await call(a, {
          session: 'results',
          files: { 'in/data.txt': 'hello session' },
          code:
            'import os\nimport matplotlib.pyplot as plt\nplt.figure()\nplt.plot([1, 2, 3])\n' +
            'os.makedirs("out", exist_ok=True)\nopen("out/a.txt", "w").write("one")\nopen("in/data.txt").read()',
        }),
      );
      assert.equal(first.out.exit_code, 0, brief(first.out));
      assert.equal(first.out.result, "'hello session'");
      assert.equal(first.out.images, 1, 'the figure left open comes back');
      assert.equal(first.extra.filter((i) => i.type === 'image').length, 1);
      assert.deepEqual(
        first.extra.filter((i) => i.type === 'resource').map((i) => [i.resource.uri, i.resource.text]),
        [['file:///out/a.txt', 'one']],
      );

      const second = ok(await call(a, { session: 'results', code: '(open("in/data.txt").read(), plt.get_fignums())' }));
      assert.equal(second.out.result, "('hello session', [])", 'the figure was closed');
      assert.deepEqual(second.extra, [], `no image, no unchanged out/ file again: ${brief(second.extra)}`);
      assert.equal(second.out.images ?? 0, 0);

      const third = ok(await call(a, { session: 'results', code: 'open("out/a.txt", "w").write("three")' }));
      assert.deepEqual(
        third.extra.filter((i) => i.type === 'resource').map((i) => [i.resource.uri, i.resource.text]),
        [['file:///out/a.txt', 'three']],
        'a changed out/ file comes back',
      );
      assert.equal(third.extra.filter((i) => i.type === 'image').length, 0);
    });

    // --- 8. Order -------------------------------------------------------------------

    it('two calls at once run one after the other, in the order sent', async () => {
      cell(await call(a, { session: 'order', code: 'L = []' }), 'order', true);
      const first = call(a, { session: 'order', code: 'import time\ntime.sleep(1)\nL.append("a")' });
      // Over HTTP each call is a request of its own, and two requests sent at
      // once may arrive in either order: the second goes a moment later.
      const stagger = kind === 'stdio' ? 0 : 200;
      if (stagger) await delay(stagger);
      const second = call(a, { session: 'order', code: 'L.append("b")\nL' });
      const [r1, r2] = await Promise.all([first, second]);
      cell(r1, 'order', false);
      const out = cell(r2, 'order', false);
      assert.equal(out.result, "['a', 'b']");
      assert.ok(out.queue_ms >= 900 - stagger, `the second call waited for the first: queue_ms ${out.queue_ms}`);
    });

    // --- 9. Lockdown ------------------------------------------------------------------

    it('the lockdown holds in a session\'s first and later cells as in a one-shot run', async () => {
      const probe = lockdownProbe(listener.address().port);
      const parse = (out) => {
        assert.equal(out.exit_code, 0, brief(out));
        return JSON.parse(out.stdout);
      };
      const oneShot = parse(ok(await call(a, { code: probe })).out);
      const cells = [parse(cell(await call(a, { session: 'locked', code: probe }), 'locked', true))];
      // A cell in between that does something else, then the probe again.
      cell(await call(a, { session: 'locked', code: 'import numpy\nx = numpy.arange(10).sum()' }), 'locked', false);
      cells.push(parse(cell(await call(a, { session: 'locked', code: probe }), 'locked', false)));
      cells.push(parse(cell(await call(a, { session: 'locked', code: probe }), 'locked', false)));
      for (const got of [oneShot, ...cells]) {
        assert.notEqual(got.inet, 'connected', `no IPv4 connection to 127.0.0.1: ${JSON.stringify(got)}`);
        assert.notEqual(got.etc, 'written', `no write under /etc: ${JSON.stringify(got)}`);
        assert.notEqual(got.uid, 0, `not root: ${JSON.stringify(got)}`);
        assert.equal(got.seccomp, '2', `seccomp filter mode: ${JSON.stringify(got)}`);
        assert.equal(got.nnp, '1', `no_new_privs: ${JSON.stringify(got)}`);
        assert.match(got.capeff, /^0+$/, `no effective capabilities: ${JSON.stringify(got)}`);
      }
      for (const got of cells) assert.deepEqual(got, oneShot, 'a session cell is locked down as a one-shot run is');
    });

    // --- 10. Connection end ------------------------------------------------------------

    it('the end of a connection ends its sessions and their processes, and no other\'s', async () => {
      cell(await call(a, { session: 'survivor', code: 'y = 5' }), 'survivor', true);
      const c = await connectExtra();
      const markers = [await sleeperIn(c, 'doomed', { fresh: true }), await sleeperIn(c, 'doomed-too', { fresh: true })];
      await c.end();
      for (const marker of markers) await waitGone(marker, 'the connection ended');
      const still = cell(await quick(a, { session: 'survivor', code: 'y' }), 'survivor', false);
      assert.equal(still.result, '5', 'the other connection\'s session goes on');
    });

    // --- The end ------------------------------------------------------------------------

    it('no transport errors; the server\'s end takes the sessions\' processes with it', async () => {
      const marker = await sleeperIn(a, 'last', { fresh: true });
      assert.deepEqual(transportErrors, [], 'no transport errors');
      await b.end();
      await a.end();
      if (kind === 'stdio') {
        // close() ends stdin; the server logs its exit status last.
        const stopped = await waitFor(
          () =>
            a
              .log()
              .split('\n')
              .filter((line) => line.startsWith('{'))
              .map((line) => JSON.parse(line))
              .find((e) => e.event === 'stopped'),
          GONE_WITHIN_MS,
          'the server logs that it stopped',
        );
        assert.equal(stopped.exit_status, 0, `server stderr:\n${a.log().slice(-4000)}`);
      } else {
        const exit = await server.stop();
        assert.deepEqual(exit, { code: 0, signal: null }, `server stderr:\n${server.log().slice(-4000)}`);
      }
      await waitGone(marker, 'the server stopped');
    });
  });
}

// ---------------------------------------------------------------------------
// Settings, each on a server of its own.

describe('MCP_EXEC_PY_SESSION_IDLE_S=2 (streamable HTTP)', () => {
  let server;
  let ctx;
  before(async () => {
    server = await startServer('http', { MCP_EXEC_PY_SESSION_IDLE_S: '2' });
    ctx = await server.connect();
    await ctx.client.listTools();
  }, { timeout: SETUP_TIMEOUT_MS });
  after(async () => {
    await ctx?.end().catch(() => {});
    await server?.stop().catch(() => {});
  });

  test('a session idle past 2 s ends, with its processes; the next call is new', { timeout: TEST_TIMEOUT_MS }, async () => {
    const before = await metrics(server.origin);
    cell(await call(ctx, { session: 'idle', code: 'x = 1' }), 'idle', true);
    const marker = await sleeperIn(ctx, 'idle', { fresh: false });
    // Used every 0.5 s for 3 s, it lives on: idle time counts from the last call.
    for (let i = 0; i < 6; i++) {
      await delay(500);
      assert.equal(cell(await quick(ctx, { session: 'idle', code: 'x' }), 'idle', false).result, '1');
    }
    await waitFor(
      async () => (await metrics(server.origin)).ends.idle === before.ends.idle + 1,
      10_000,
      'mcp_exec_py_session_ends_total{reason="idle"} goes up by one',
    );
    await waitGone(marker, 'the session went idle');
    assert.equal((await metrics(server.origin)).live, before.live, 'mcp_exec_py_sessions is back where it was');
    const next = cell(await quick(ctx, { session: 'idle', code: '"x" in globals()' }), 'idle', true);
    assert.equal(next.result, 'False');
  });
});

describe('MCP_EXEC_MAX_PY_SESSIONS=2 (streamable HTTP)', () => {
  let server;
  let c1;
  let c2;
  before(async () => {
    server = await startServer('http', { MCP_EXEC_MAX_PY_SESSIONS: '2' });
    c1 = await server.connect();
    c2 = await server.connect();
    await c1.client.listTools();
    await c2.client.listTools();
  }, { timeout: SETUP_TIMEOUT_MS });
  after(async () => {
    await c2?.end().catch(() => {});
    await c1?.end().catch(() => {});
    await server?.stop().catch(() => {});
  });

  // The bound is the server's (issue 26, point 4, after issue 19, point 17):
  // when it is full, a new session ends the least recently used idle one,
  // of the connection that holds the most if it holds more than the asker,
  // else of any (a connection's own too). A name that lost its place starts
  // afresh on its next call (session_new).
  test('a full pool ends the least recently used idle session, of the connection holding the most first', { timeout: TEST_TIMEOUT_MS }, async () => {
    const before = await metrics(server.origin);
    cell(await quick(c1, { session: 'a', code: 'x = "a"' }), 'a', true);
    cell(await quick(c1, { session: 'b', code: 'x = "b"' }), 'b', true);
    assert.equal((await metrics(server.origin)).live, 2);
    // c1's own oldest, a, gives way to its third.
    cell(await quick(c1, { session: 'c', code: 'x = "c"' }), 'c', true);
    assert.equal(cell(await quick(c1, { session: 'b', code: 'x' }), 'b', false).result, "'b'", 'b is kept');
    // c2 holds none: c1's least recently used, c, gives way.
    const z = cell(await quick(c2, { session: 'z', code: 'print("ran")' }), 'z', true);
    assert.equal(z.stdout, 'ran\n');
    assert.equal(cell(await quick(c1, { session: 'b', code: 'x' }), 'b', false).result, "'b'", 'b is still kept');
    assert.equal(ok(await quick(c2, { code: '1 + 1' })).out.result, '2', 'a one-shot call still runs');
    const after = await metrics(server.origin);
    assert.equal(after.live, 2);
    assert.equal(after.ends.evicted, before.ends.evicted + 2, 'a, then c, were evicted');
    assert.equal(after.evictions, before.evictions + 2, 'counted as evictions of the python table');
    assert.equal(after.refusals, before.refusals, 'nobody was refused');
  });

  test('when a connection ends, its places are free for new names', { timeout: TEST_TIMEOUT_MS }, async () => {
    await c1.end();
    await waitFor(
      async () => (await metrics(server.origin)).live === 1,
      GONE_WITHIN_MS,
      'the first connection\'s session ends with it',
    );
    assert.equal(cell(await quick(c2, { session: 'z', code: 'x = "z"; x' }), 'z', false).result, "'z'");
    cell(await quick(c2, { session: 'y', code: '1' }), 'y', true);
    assert.equal((await metrics(server.origin)).live, 2);
  });
});

describe('MCP_EXEC_PY_SESSION_INTERRUPT_MS=300 (stdio)', () => {
  let ctx;
  before(async () => {
    ctx = await connectStdio({ ...DEFAULT_ENV, MCP_EXEC_PY_SESSION_INTERRUPT_MS: '300' });
    await ctx.client.listTools();
  }, { timeout: SETUP_TIMEOUT_MS });
  after(async () => {
    await ctx?.end().catch(() => {});
  });

  for (const [what, name, code] of [
    ['a loop in C that never checks for signals', 'native', LOOPS_IN_C],
    ['a loop that ignores SIGINT', 'sig-ign', IGNORES_INTERRUPT],
  ]) {
    test(`${what}: killed 300 ms after the interrupt; the next call is new`, { timeout: TEST_TIMEOUT_MS }, async () => {
      cell(await call(ctx, { session: name, code: 'x = 1' }), name, true);
      const { out } = ok(await call(ctx, { session: name, timeout_s: 1, code }));
      assert.equal(out.timed_out, true, brief(out));
      assert.equal(out.reason, 'timeout');
      assert.equal(out.exit_code, -1);
      assert.equal(typeof out.session_ended, 'string', `session_ended: ${brief(out)}`);
      assert.ok(out.session_ended.includes('did not stop within 300 ms'), out.session_ended);
      assert.equal(out.session, name);
      assert.equal(out.session_new, false);
      const next = cell(await quick(ctx, { session: name, code: '"x" in globals()' }), name, true);
      assert.equal(next.result, 'False');
    });
  }
});

describe('HTTP session expiry, MCP_EXEC_SESSION_IDLE_S=2 (streamable HTTP)', () => {
  let server;
  before(async () => {
    server = await startServer('http', { MCP_EXEC_SESSION_IDLE_S: '2' });
  }, { timeout: SETUP_TIMEOUT_MS });
  after(async () => {
    await server?.stop().catch(() => {});
  });

  test('a client that leaves without DELETE: its MCP session expires and its Python sessions end', { timeout: TEST_TIMEOUT_MS }, async () => {
    const ctx = await server.connect();
    await ctx.client.listTools();
    const marker = await sleeperIn(ctx, 'abandoned', { fresh: true });
    // The client goes away (its streams close) without ending its session.
    await ctx.client.close();
    await waitFor(
      async () => (await metrics(server.origin)).ends.connection_closed === 1,
      15_000,
      () =>
        'the Python session ends once the MCP session expired; the server logged:\n' +
        server
          .log()
          .split('\n')
          .filter((line) => /"event":"(session_|py_session_|sessions_expired)/.test(line))
          .join('\n'),
    );
    await waitGone(marker, 'the MCP session expired');
  });
});

describe('/metrics (streamable HTTP)', () => {
  let server;
  before(async () => {
    server = await startServer('http');
  }, { timeout: SETUP_TIMEOUT_MS });
  after(async () => {
    await server?.stop().catch(() => {});
  });

  test('session gauges and counters follow starts, resets, crashes and connection ends', { timeout: TEST_TIMEOUT_MS }, async () => {
    const m0 = await metrics(server.origin);
    assert.deepEqual(m0, {
      live: 0,
      starts: 0,
      ends: { reset: 0, idle: 0, lifetime: 0, connection_closed: 0, interpreter_ended: 0, shutdown: 0, evicted: 0, ended_by_call: 0 },
      evictions: 0,
      refusals: 0,
    });
    const ctx = await server.connect();
    await ctx.client.listTools();
    ok(await quick(ctx, { code: '1' }));
    assert.deepEqual(await metrics(server.origin), m0, 'a one-shot call is no session');

    cell(await quick(ctx, { session: 'm1', code: '1' }), 'm1', true);
    cell(await quick(ctx, { session: 'm1', code: '1' }), 'm1', false);
    cell(await quick(ctx, { session: 'm2', code: '1' }), 'm2', true);
    let m = await metrics(server.origin);
    assert.equal(m.live, 2);
    assert.equal(m.starts, 2);

    cell(await quick(ctx, { session: 'm1', reset: true, code: '1' }), 'm1', true);
    m = await metrics(server.origin);
    assert.equal(m.live, 2);
    assert.equal(m.starts, 3);
    assert.equal(m.ends.reset, 1);

    ok(await quick(ctx, { session: 'm2', code: 'import os\nos._exit(3)' }));
    m = await metrics(server.origin);
    assert.equal(m.live, 1);
    assert.equal(m.ends.interpreter_ended, 1);

    toolError(await quick(ctx, { session: 'bad name', code: '1' }));
    assert.deepEqual(await metrics(server.origin), m, 'a refused name changes nothing');

    await ctx.end();
    await waitFor(
      async () => {
        const now = await metrics(server.origin);
        return now.live === 0 && now.ends.connection_closed === 1;
      },
      GONE_WITHIN_MS,
      'mcp_exec_py_sessions 0 and ends_total{reason="connection_closed"} 1 after the DELETE',
    );
    m = await metrics(server.origin);
    assert.deepEqual(m, {
      live: 0,
      starts: 3,
      ends: { reset: 1, idle: 0, lifetime: 0, connection_closed: 1, interpreter_ended: 1, shutdown: 0, evicted: 0, ended_by_call: 0 },
      evictions: 0,
      refusals: 0,
    });
  });
});
