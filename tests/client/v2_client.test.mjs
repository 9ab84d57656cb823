// The v2 TypeScript SDK client (@modelcontextprotocol/client), which speaks
// MCP 2026-07-28, against mcp-exec over stdio and streamable HTTP: pinned to
// 2026-07-28 and in `auto` mode (it probes server/discover first), it must
// negotiate 2026-07-28 and get what the v1 client gets: results, input and
// out/ files, figures, progress, cancellation, and sessions by handle (minted
// with session "new", reused from a second client of the same server, an
// unknown one refused).
// Run from the repository root:
//   node --test tests/client/v2_client.test.mjs
// MCP_EXEC_BIN overrides the server binary.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { brief, ok, startHttpServer, toolError } from './mcp_client.mjs';
import { STATELESS_VERSION as VERSION, connectV2Http as connectHttp, connectV2Stdio as connectStdio } from './v2_client.mjs';

const SETUP_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 40_000;
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Pids whose command line holds `needle` (the marker of a sleeping run).
function pidsWith(needle) {
  const pids = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle)) pids.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids;
}

async function waitUntil(cond, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (cond()) return true;
    await delay(100);
  }
  return cond();
}

const exec = (ctx, args, options = {}) =>
  ctx.client.callTool({ name: 'exec', arguments: args }, { timeout: 30_000, ...options });

const MODES = [
  { label: 'pinned to 2026-07-28', mode: { pin: VERSION } },
  { label: 'auto', mode: 'auto' },
];

for (const transportKind of ['stdio', 'streamable HTTP']) {
  for (const { label, mode } of MODES) {
    describe(`v2 client, ${label}, over ${transportKind}`, () => {
      let server;
      let ctx;
      const connect = (name) =>
        transportKind === 'stdio' ? connectStdio(name, mode) : connectHttp(server, name, mode);

      before(async () => {
        if (transportKind !== 'stdio') server = await startHttpServer({ transport: 'http' });
        ctx = await connect('v2-results');
      }, { timeout: SETUP_TIMEOUT_MS });

      after(async () => {
        await ctx?.close().catch(() => {});
        if (server) assert.deepEqual(await server.stop(), { code: 0, signal: null });
      });

      const it = (name, fn) => test(name, { timeout: TEST_TIMEOUT_MS }, fn);

      it('negotiates 2026-07-28 and lists the tool with its session header', async () => {
        assert.equal(ctx.client.getNegotiatedProtocolVersion(), VERSION);
        const { tools } = await ctx.client.listTools();
        assert.deepEqual(tools.map((t) => t.name), ['exec']);
        assert.equal(tools[0].inputSchema.properties.session['x-mcp-header'], 'Session');
      });

      it('a result: stdout, stderr, exit code; a timeout keeps what was printed', async () => {
        const { out } = ok(await exec(ctx, { code: 'import sys\nprint(6 * 7)\nprint("e", file=sys.stderr)\nsys.exit(3)' }));
        assert.equal(out.stdout, '42\n');
        assert.equal(out.stderr, 'e\n');
        assert.equal(out.exit_code, 3);
        const slow = ok(await exec(ctx, { code: 'import time\nprint("before", flush=True)\ntime.sleep(30)', timeout_s: 1 }));
        assert.equal(slow.out.timed_out, true);
        assert.equal(slow.out.reason, 'timeout');
        assert.equal(slow.out.stdout, 'before\n');
      });

      it('files in, out/ files as resources, a figure as a PNG image, the last expression', async () => {
        const { out, extra } = ok(
          await exec(ctx, {
            code:
              'import os, matplotlib.pyplot as plt\nos.makedirs("out", exist_ok=True)\n' +
              'open("out/r.txt", "w").write(open("in.txt").read().upper())\n' +
              'plt.plot([1, 2]); plt.show()\n1 + 1',
            files: { 'in.txt': 'abc' },
          }),
        );
        assert.equal(out.result, '2', brief(out));
        assert.deepEqual(out.files, ['out/r.txt']);
        const resource = extra.find((item) => item.type === 'resource');
        assert.equal(resource?.resource?.text, 'ABC', brief(extra));
        const image = extra.find((item) => item.type === 'image');
        assert.equal(image?.mimeType, 'image/png');
        assert.deepEqual(Buffer.from(image.data, 'base64').subarray(0, 8), PNG_MAGIC);
      });

      it('progress comes while a call runs', async () => {
        const seen = [];
        const { out } = ok(
          await exec(
            ctx,
            { code: 'import time\nfor i in range(3):\n    print("line", i, flush=True)\n    time.sleep(1)' },
            { onprogress: (p) => seen.push(p) },
          ),
        );
        assert.equal(out.stdout, 'line 0\nline 1\nline 2\n');
        assert.ok(seen.length >= 1, `progress notifications: ${JSON.stringify(seen)}`);
        for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress);
      });

      it('cancelling a call ends its run', async () => {
        const marker = `600.${Math.floor(Math.random() * 1e9)}`;
        const controller = new AbortController();
        const call = exec(
          ctx,
          { code: `import subprocess\nsubprocess.run(["sleep", "${marker}"])`, timeout_s: 60 },
          { signal: controller.signal },
        );
        call.catch(() => {});
        assert.ok(await waitUntil(() => pidsWith(marker).length > 0, 20_000), 'the run started');
        controller.abort('the test cancels');
        await assert.rejects(call);
        assert.ok(await waitUntil(() => pidsWith(marker).length === 0, 10_000), 'the run outlived its cancellation');
        // The connection still serves.
        assert.equal(ok(await exec(ctx, { code: 'print("after")' })).out.stdout, 'after\n');
      });

      it('sessions by handle: "new", the handle from a second client, reset, an unknown handle', async () => {
        const made = ok(await exec(ctx, { code: 'x = 41', session: 'new' })).out;
        assert.match(made.session, /^py-[A-Za-z0-9_-]{24}$/);
        assert.equal(made.session_new, true);
        // A second client: of the same server over HTTP, where the handle
        // works; over stdio a second client is a second server, which never
        // made the handle.
        const other = await connect('v2-second');
        try {
          const again = await exec(other, { code: 'print(x + 1)', session: made.session });
          if (transportKind === 'stdio') {
            assert.match(toolError(again), /is not a live session of this server/);
          } else {
            assert.equal(ok(again).out.stdout, '42\n');
            assert.equal(ok(again).out.session_new, false);
          }
        } finally {
          await other.close();
        }
        const same = ok(await exec(ctx, { code: 'print(x + 1)', session: made.session })).out;
        assert.equal(same.stdout, '42\n');
        assert.equal(same.session_new, false);
        const reset = ok(await exec(ctx, { code: 'print("x" in globals())', session: made.session, reset: true })).out;
        assert.equal(reset.stdout, 'False\n');
        assert.equal(reset.session, made.session);
        const guess = `py-${'A'.repeat(24)}`;
        const text = toolError(await exec(ctx, { code: 'print(1)', session: guess }));
        assert.match(text, /is not a live session of this server/);
        assert.match(text, /session: "new"/);
        const named = toolError(await exec(ctx, { code: 'print(1)', session: 'nb' }));
        assert.match(named, /is not a session handle/);
      });
    });
  }
}
