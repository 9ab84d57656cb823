// What a run leaves for the client to fetch, through the official SDK
// clients: an out/ file too big to embed comes back as a resource_link (a
// small one still embedded), a stream past the output budget is kept whole
// (stdout_resource), and resources/read serves both whole, in both protocol
// eras (v1 SDK: 2025-11-25; v2 SDK pinned to 2026-07-28) over stdio and
// streamable HTTP. Then the store's bounds: the oldest evicted past
// MCP_EXEC_RESOURCE_STORE_MB, nothing served after MCP_EXEC_RESOURCE_TTL_S,
// a guessed URI refused (-32002 in 2025, -32602 in 2026-07-28).
// Run from the repository root:
//   node --test tests/client/resources.test.mjs
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { brief, connectHttpClient, connectMcpExec, ok, startHttpServer } from './mcp_client.mjs';
import { STATELESS_VERSION, connectV2Http, connectV2Stdio } from './v2_client.mjs';

const TIMEOUT_MS = 120_000;
const BIG = 20 << 20;
const LINES = 300_000;
// Defaults these tests count on; an inherited setting is removed.
const DEFAULTS = {
  MCP_EXEC_MAX_OUT_BYTES: undefined,
  MCP_EXEC_MAX_OUTPUT_BYTES: undefined,
  MCP_EXEC_DISK_LIMIT_MB: undefined,
  MCP_EXEC_RESOURCE_TTL_S: undefined,
  MCP_EXEC_RESOURCE_STORE_MB: undefined,
};

// A 20 MiB out/ file of bytes 0..255 repeated, a small text file, and
// 300,000 printed lines (about 3.4 MB, past the 1 MiB output budget).
const CODE =
  'import os\nos.makedirs("out", exist_ok=True)\n' +
  `open("out/big.bin", "wb").write(bytes(range(256)) * ${BIG / 256})\n` +
  'open("out/small.txt", "w").write("small and embedded")\n' +
  `for i in range(${LINES}):\n    print("line", i)`;
const BIG_SHA = createHash('sha256')
  .update(Buffer.alloc(BIG, Buffer.from(Array.from({ length: 256 }, (_, i) => i))))
  .digest('hex');
const STDOUT = Array.from({ length: LINES }, (_, i) => `line ${i}\n`).join('');

// The resource's bytes: its contents items in order, text or base64 blob.
function joined(read) {
  assert.ok(Array.isArray(read.contents) && read.contents.length > 0, brief(read));
  return Buffer.concat(
    read.contents.map((c) => (c.blob !== undefined ? Buffer.from(c.blob, 'base64') : Buffer.from(c.text, 'utf8'))),
  );
}

// A resource read whole: its first read, then each next part its _meta
// names (a resource past 4 MiB is read in parts: a stdio client drops a
// message past 10 MiB).
async function readWhole(client, uri) {
  const reads = [];
  for (let next = uri; next; ) {
    const read = await client.readResource({ uri: next }, { timeout: 60_000 });
    for (const c of read.contents) assert.equal(c.uri, next);
    reads.push(read);
    next = read._meta?.['mcp-exec/next'];
    assert.ok(reads.length <= 100, 'a bounded number of parts');
  }
  return { bytes: Buffer.concat(reads.map(joined)), reads };
}

function links(extra) {
  return Object.fromEntries(extra.filter((c) => c.type === 'resource_link').map((c) => [c.name, c]));
}

async function readError(client, uri) {
  try {
    const read = await client.readResource({ uri });
    return { read };
  } catch (err) {
    return { code: err.code, message: err.message };
  }
}

const connections = [
  {
    name: 'stdio, protocol 2025 (v1 SDK)',
    notFound: -32002,
    open: async () => {
      const c = await connectMcpExec({ clientName: 'resources-stdio', env: DEFAULTS });
      return { client: c.client, close: () => c.client.close() };
    },
  },
  {
    name: 'streamable HTTP, protocol 2025 (v1 SDK)',
    notFound: -32002,
    open: async () => {
      const server = await startHttpServer({ env: DEFAULTS });
      const { client } = await connectHttpClient(server, { clientName: 'resources-http' });
      return { client, close: async () => (await client.close(), await server.stop()) };
    },
  },
  {
    name: `stdio, protocol ${STATELESS_VERSION} (v2 SDK)`,
    notFound: -32602,
    stateless: true,
    open: () => connectV2Stdio('resources-v2-stdio', { pin: STATELESS_VERSION }, DEFAULTS),
  },
  {
    name: `streamable HTTP, protocol ${STATELESS_VERSION} (v2 SDK)`,
    notFound: -32602,
    stateless: true,
    open: async () => {
      const server = await startHttpServer({ env: DEFAULTS });
      const c = await connectV2Http(server, 'resources-v2-http', { pin: STATELESS_VERSION });
      return { client: c.client, close: async () => (await c.close(), await server.stop()) };
    },
  },
];

for (const conn of connections) {
  describe(`resources over ${conn.name}`, { timeout: TIMEOUT_MS }, () => {
    let ctx;
    before(async () => {
      ctx = await conn.open();
    });
    after(async () => ctx?.close());

    it('a 20 MiB out/ file and 300,000 printed lines come back whole through resources/read', async () => {
      const result = await ctx.client.callTool({ name: 'exec', arguments: { code: CODE } }, undefined, {
        timeout: 60_000,
      });
      const { out, extra } = ok(result);
      assert.equal(out.exit_code, 0, brief(out));
      assert.deepEqual(out.files, ['out/small.txt', 'out/big.bin']);
      assert.equal(out.files_omitted_count, 0);
      assert.equal(out.truncated, true);

      // The small file is still embedded.
      const embedded = extra.filter((c) => c.type === 'resource');
      assert.equal(embedded.length, 1, brief(extra));
      assert.equal(embedded[0].resource.uri, 'file:///out/small.txt');
      assert.equal(embedded[0].resource.text, 'small and embedded');

      const byName = links(extra);
      const big = byName['out/big.bin'];
      assert.ok(big, `a resource_link for out/big.bin: ${brief(extra)}`);
      assert.equal(big.size, BIG);
      assert.equal(big.mimeType, 'application/octet-stream');
      assert.match(big.uri, /^mcp-exec:\/\/resource\/[0-9a-f]{32}\/out\/big\.bin$/);
      assert.equal(big._meta?.['mcp-exec/parts'], 5);
      const { bytes, reads } = await readWhole(ctx.client, big.uri);
      assert.equal(bytes.length, BIG);
      assert.equal(createHash('sha256').update(bytes).digest('hex'), BIG_SHA, 'the same bytes');
      assert.equal(reads.length, 5, 'five parts of 4 MiB');
      assert.deepEqual(
        reads.map((r) => r._meta['mcp-exec/part']),
        [1, 2, 3, 4, 5],
      );
      if (conn.stateless) {
        assert.ok(reads[0].ttlMs > 0 && reads[0].ttlMs <= 900_000, `ttlMs ${reads[0].ttlMs}`);
        assert.equal(reads[0].cacheScope, 'private');
      }

      // The whole stdout, though the result holds its first MiB and tail.
      assert.ok(out.stdout_resource, brief(out));
      assert.equal(byName.stdout?.uri, out.stdout_resource);
      assert.equal(byName.stdout.size, STDOUT.length);
      const whole = await readWhole(ctx.client, out.stdout_resource);
      assert.equal(whole.bytes.toString('utf8'), STDOUT);
      assert.equal(whole.reads.length, 1, 'one read');
      assert.equal(whole.reads[0].contents[0].mimeType, 'text/plain');
      assert.equal(typeof whole.reads[0].contents[0].text, 'string');
    });

    it(`a guessed URI is refused with ${conn.notFound}`, async () => {
      for (const uri of [
        'mcp-exec://resource/00000000000000000000000000000000/out/big.bin',
        'mcp-exec://resource/',
        'mcp-exec://resource/00000000000000000000000000000000/out/big.bin?part=2',
        'file:///out/small.txt',
        'x'.repeat(5000),
      ]) {
        const got = await readError(ctx.client, uri);
        assert.equal(got.code, conn.notFound, `${uri.slice(0, 60)}: ${brief(got)}`);
      }
    });
  });
}

// Long enough for the reads below on a busy machine (two 20 MiB resources
// read in parts took 14 s beside the suite's builds), short enough to wait out.
const TTL_S = 30;
describe('the store: MCP_EXEC_RESOURCE_STORE_MB=50, MCP_EXEC_RESOURCE_TTL_S=30', { timeout: TIMEOUT_MS }, () => {
  let ctx;
  before(async () => {
    ctx = await connectMcpExec({
      clientName: 'resources-bounds',
      env: { ...DEFAULTS, MCP_EXEC_RESOURCE_STORE_MB: '50', MCP_EXEC_RESOURCE_TTL_S: String(TTL_S) },
    });
  });
  after(async () => ctx?.client.close());

  const bigFile = async (tag) => {
    const code = `import os\nos.makedirs("out", exist_ok=True)\nopen("out/${tag}.bin", "wb").write(b"${tag}" * (20 << 20))`;
    const { out, extra } = ok(await ctx.client.callTool({ name: 'exec', arguments: { code } }));
    assert.equal(out.exit_code, 0, brief(out));
    const link = links(extra)[`out/${tag}.bin`];
    assert.ok(link, brief(extra));
    return link.uri;
  };

  it('the oldest resource goes first to make room, and none outlives its TTL', async () => {
    const first = await bigFile('a');
    const second = await bigFile('b');
    assert.equal((await readWhole(ctx.client, first)).bytes.length, 20 << 20);
    const third = await bigFile('c'); // 60 MiB would not fit in 50: the first goes
    const thirdAt = Date.now();
    assert.equal((await readError(ctx.client, first)).code, -32002, 'the oldest was evicted');
    assert.equal((await readWhole(ctx.client, second)).bytes.length, 20 << 20);
    assert.equal((await readWhole(ctx.client, third)).bytes.length, 20 << 20);
    // Reading 40 MiB takes seconds on a busy machine: the TTL leaves room
    // for it, and the wait ends just past the TTL of the newest.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, TTL_S * 1000 + 500 - (Date.now() - thirdAt))));
    const expired = await readError(ctx.client, third);
    assert.equal(expired.code, -32002, `expired after ${TTL_S} s: ${brief(expired)}`);
    assert.match(expired.message, /resource not found/);
  });
});
