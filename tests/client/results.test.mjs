// Rich call results through the official MCP TypeScript SDK client, on all
// three transports of mcp-exec (stdio, streamable HTTP, legacy HTTP+SSE):
// output kept past a timeout or a crash, stdout_tail/stderr_tail past the
// output budget, figures and display() as image content, out/ files as
// embedded resources, input files (and every way to get them wrong), the last
// expression as `result`, progress notifications with the output so far, and
// the schemas and description that announce all of it.
// One server and one client per transport, shared by that transport's tests,
// which run in order. Run from the repository root:
//   node --test tests/client/results.test.mjs
// MCP_EXEC_BIN overrides the server binary.
import assert from 'node:assert/strict';
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
const TEST_TIMEOUT_MS = 30_000;
const CALL_TIMEOUT_MS = 25_000;

// The limits these tests count on are the defaults: an inherited MCP_EXEC_*
// setting for one of them is removed.
const DEFAULT_ENV = Object.fromEntries(
  [
    'MCP_EXEC_MAX_OUTPUT_BYTES',
    'MCP_EXEC_TAIL_BYTES',
    'MCP_EXEC_TEXT_OUTPUT_BYTES',
    'MCP_EXEC_MAX_IMAGES',
    'MCP_EXEC_MAX_IMAGE_BYTES',
    'MCP_EXEC_MAX_IMAGE_SIDE',
    'MCP_EXEC_MAX_OUT_FILES',
    'MCP_EXEC_MAX_OUT_BYTES',
    'MCP_EXEC_MAX_RESULT_BYTES',
    'MCP_EXEC_MAX_IN_FILES',
    'MCP_EXEC_MAX_IN_BYTES',
    'MCP_EXEC_MAX_REQUEST_BYTES',
    'MCP_EXEC_MEMORY_LIMIT_MB',
    'MCP_EXEC_DISK_LIMIT_MB',
    'MCP_EXEC_MAX_TIMEOUT_S',
    'MCP_EXEC_DEFAULT_TIMEOUT_S',
  ].map((name) => [name, undefined]),
);

const MAX_OUTPUT_BYTES = 1_048_576;
const TAIL_BYTES = 4096;
const MAX_IMAGES = 8;
const MAX_IMAGE_BYTES = 1_048_576;
const MAX_IMAGE_SIDE = 2000;
const MAX_RESULT_BYTES = 16_384;
const MAX_IN_BYTES = 4_194_304;
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

// ---------------------------------------------------------------------------
// Connections. Each returns { client, transport, log(), messages, close() }:
// messages collects every notifications/progress the client's transport
// delivered (tapped below the SDK's own dispatch, so that notifications the
// SDK would route or drop are seen too); close() ends the session and the
// server and resolves to how the server ended.

function tapProgress(transport) {
  const messages = [];
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message?.method === 'notifications/progress') messages.push(message);
    deliver?.(message, extra);
  };
  return messages;
}

async function connectStdio(env) {
  const { client, transport, serverLog } = await connectMcpExec({ clientName: 'results-stdio', env });
  return {
    client,
    transport,
    log: serverLog,
    messages: tapProgress(transport),
    async close() {
      await client.close();
      // close() ends stdin; the server logs its exit status last.
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        const stopped = serverLog()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l))
          .find((e) => e.event === 'stopped');
        if (stopped) return { exit_status: stopped.exit_status };
        await new Promise((r) => setTimeout(r, 50));
      }
      return { exit_status: 'never logged stopped' };
    },
  };
}

async function connectHttp(kind, env) {
  const server = await startHttpServer({ transport: kind, env });
  try {
    const { client, transport } = await connectHttpClient(server, { clientName: `results-${kind}` });
    return {
      client,
      transport,
      log: server.log,
      messages: tapProgress(transport),
      async close() {
        if (kind === 'http') await transport.terminateSession().catch(() => {});
        await client.close().catch(() => {});
        const exit = await server.stop();
        return { exit, stdout: server.stdout() };
      },
    };
  } catch (err) {
    await server.stop().catch(() => {});
    err.message += `\nserver stderr:\n${server.log()}`;
    throw err;
  }
}

const TRANSPORTS = [
  { label: 'stdio', connect: connectStdio, closed: { exit_status: 0 } },
  { label: 'streamable HTTP', connect: (env) => connectHttp('http', env), closed: { exit: { code: 0, signal: null }, stdout: '' } },
  { label: 'legacy SSE', connect: (env) => connectHttp('sse', env), closed: { exit: { code: 0, signal: null }, stdout: '' } },
];

// ---------------------------------------------------------------------------
// Calls and checks.

function call(ctx, args, options = {}) {
  return ctx.client.callTool({ name: 'exec', arguments: args }, CallToolResultSchema, {
    timeout: CALL_TIMEOUT_MS,
    ...options,
  });
}


// The image items of a result's extra content, decoded and checked as PNG.
function pngImages(extra) {
  return extra
    .filter((item) => item.type === 'image')
    .map((item) => {
      assert.equal(item.mimeType, 'image/png');
      assert.equal(typeof item.data, 'string');
      const bytes = Buffer.from(item.data, 'base64');
      assert.equal(bytes.toString('base64'), item.data, 'data is canonical base64');
      assert.deepEqual(bytes.subarray(0, 8), PNG_MAGIC, 'the image starts with the PNG signature');
      // IHDR is the first chunk: width and height at bytes 16..24.
      return { bytes, width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
    });
}

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Progress notifications seen during fn(), and fn's value.
async function withProgressTap(ctx, fn) {
  const start = ctx.messages.length;
  const value = await fn();
  // A notification sent just before the response is on the same ordered
  // stream for stdio and SSE; for streamable HTTP it is on the POST's stream,
  // before the response. A short grace for stray late ones all the same.
  await delay(100);
  return { value, notes: ctx.messages.slice(start).map((m) => m.params) };
}

// ---------------------------------------------------------------------------
// Code used below.

const CODE = {
  timeout: 'import time\nfor i in range(10):\n    print(i)\n    time.sleep(1)',
  segfault: 'print("before crash")\nimport ctypes\nctypes.string_at(0)',
  tails: 'print("a" * 2_000_000)\nraise ValueError("the error you need")',
  showThenOpen: 'import matplotlib.pyplot as plt\nplt.plot([1,2,3])\nplt.show()\nplt.figure()\nplt.plot([3,2,1])',
  displayPil: 'from PIL import Image\ndisplay(Image.new("RGB",(40,20),"red"), 42)',
  thirtyOpen: 'import matplotlib.pyplot as plt\nfor i in range(30):\n    plt.figure(); plt.plot([i])',
  thirtyShown: 'import matplotlib.pyplot as plt\nfor i in range(30):\n    plt.figure(); plt.plot([i])\nplt.show()',
  hugeOpen:
    'import matplotlib.pyplot as plt\nimport numpy as np\nfig = plt.figure(figsize=(40,40), dpi=200)\nplt.imshow(np.random.rand(2000,2000))',
  hugeDisplayed:
    'import matplotlib.pyplot as plt\nimport numpy as np\nfig = plt.figure(figsize=(40,40), dpi=200)\nplt.imshow(np.random.rand(2000,2000))\ndisplay(fig)',
  // 12000x1600 px at its own size: the longer side is the bound's.
  wideFigure:
    'import matplotlib.pyplot as plt\nfig = plt.figure(figsize=(60, 8), dpi=200)\nplt.plot(range(100))\nplt.show()',
  widePil: 'from PIL import Image\ndisplay(Image.new("RGB", (3000, 1000), "blue"))',
  // 800x800 RGB noise: ~1.9 MB as PNG, past the 1 MiB image bound.
  noisyPil:
    'import numpy as np\nfrom PIL import Image\ndisplay(Image.fromarray((np.random.rand(800,800,3)*255).astype("uint8")))',
  outFiles:
    'import os\nos.makedirs("out/sub")\nopen("out/report.csv","w").write("a,b\\n1,2\\n")\n' +
    'open("out/sub/blob.bin","wb").write(bytes(range(256)))\nopen("notout.txt","w").write("x")',
  outBig:
    'import os\nos.makedirs("out", exist_ok=True)\nopen("out/big.bin","wb").write(b"x" * (50 << 20))\nopen("out/small.txt","w").write("ok")',
  inFiles: 'print(open("in/data.txt").read()); print(list(open("b.bin","rb").read()))',
  describe: 'import pandas as pd\ndf = pd.DataFrame({"a":[1,2]})\ndf.describe()',
  figureLast: 'import matplotlib.pyplot as plt\nfig = plt.figure()\nplt.plot([1])\nfig',
  progress: 'import time\nfor i in range(3):\n    print("line", i, flush=True)\n    time.sleep(1)',
  progressShort: 'import time\nfor i in range(2):\n    print("line", i, flush=True)\n    time.sleep(1)',
  flood: 'import time\nfor i in range(5000):\n    print("flood", i)\ntime.sleep(2.5)',
};

const THREE_MIB = 'x'.repeat(3 << 20);
const SIXTY_FIVE = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`f${i}.txt`, 'x']));

// Bad `files` arguments: each is a tool error whose text names the path (when
// there is one) and says what is wrong. `names` are strings the text holds.
const BAD_FILES = [
  { what: 'an absolute path', files: { '/etc/x': 'x' }, names: ['"/etc/x"', 'absolute'] },
  { what: 'a leading ..', files: { '../x': 'x' }, names: ['"../x"', '..'] },
  { what: 'a .. that climbs out', files: { 'a/../../x': 'x' }, names: ['"a/../../x"', '..'] },
  { what: 'an empty name', files: { '': 'x' }, names: ['empty'] },
  { what: 'a NUL in the name', files: { 'a\u0000b': 'x' }, names: ['"a\u0000b"', 'NUL'] },
  { what: 'a number', files: { 'n.txt': 5 }, names: ['"n.txt"', 'must be a string', 'number'] },
  { what: 'an array', files: { 'arr.txt': [1] }, names: ['"arr.txt"', 'must be a string', 'array'] },
  { what: '{"base64": 5}', files: { 'b64.bin': { base64: 5 } }, names: ['"b64.bin"', 'must be a string'] },
  { what: 'an object without base64', files: { 'other.bin': { other: 'x' } }, names: ['"other.bin"', 'must be a string'] },
  { what: 'invalid base64', files: { 'bad.bin': { base64: '@@@' } }, names: ['"bad.bin"', 'base64'] },
  { what: 'files as a string', files: 'in/data.txt', names: ['files must be an object', 'string'] },
  { what: '65 entries', files: SIXTY_FIVE, names: ['65', '64'] },
  {
    what: 'more than MCP_EXEC_MAX_IN_BYTES in all',
    files: { 'big1.txt': THREE_MIB, 'big2.txt': THREE_MIB },
    names: ['"big2.txt"', String(MAX_IN_BYTES)],
  },
  { what: 'a file that is also a folder', files: { a: 'x', 'a/b': 'y' }, names: ['"a"', '"a/b"', 'folder'] },
];

// ---------------------------------------------------------------------------
// The tests, once per transport.

for (const { label, connect, closed } of TRANSPORTS) {
  describe(`results over ${label}`, () => {
    let ctx;
    let closedWith;
    const transportErrors = [];

    before(async () => {
      ctx = await connect(DEFAULT_ENV);
      ctx.client.onerror = (err) => transportErrors.push(String(err?.stack ?? err));
      // listTools caches the output schema: from here on the SDK validates
      // every structuredContent against it.
      await ctx.client.listTools();
    }, { timeout: SETUP_TIMEOUT_MS });

    after(async () => {
      if (ctx && !closedWith) await ctx.close().catch(() => {});
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

    // --- 8. Schemas and description ----------------------------------------

    it('tools/list: the output schema, reason enum, files input and the description', async () => {
      const { tools } = await ctx.client.listTools();
      const exec = tools.find((t) => t.name === 'exec');
      assert.ok(exec, 'the exec tool is listed');
      const props = exec.outputSchema?.properties ?? {};
      for (const field of [
        'stdout_tail',
        'stderr_tail',
        'result',
        'result_truncated',
        'images',
        'images_omitted',
        'files',
        'files_omitted',
        'files_omitted_count',
      ]) {
        assert.ok(props[field], `outputSchema.properties.${field}`);
      }
      for (const reason of ['timeout', 'memory', 'cpu', 'file_size', 'seccomp', 'signal', 'cancelled', 'shutdown']) {
        assert.ok(props.reason?.enum?.includes(reason), `reason enum has ${reason}: ${JSON.stringify(props.reason?.enum)}`);
      }
      assert.ok(exec.inputSchema.properties.files, 'inputSchema.properties.files');
      assert.equal(exec.inputSchema.properties.files.type, 'object');
      const text = exec.description;
      for (const piece of ['out/', 'display(', 'result', 'files', String(MAX_IMAGE_BYTES)]) {
        assert.ok(text.includes(piece), `the description mentions ${piece}: ${text}`);
      }
      assert.match(text, new RegExp(`at most ${MAX_IMAGES}\\b`), 'the description quotes the image bound');
    });

    // --- 1. Output survives a timeout and a crash --------------------------

    it('a timeout keeps what was printed before it', async () => {
      const { out } = ok(await call(ctx, { code: CODE.timeout, timeout_s: 3 }));
      assert.equal(out.timed_out, true);
      assert.equal(out.reason, 'timeout');
      assert.equal(out.exit_code, -1);
      assert.ok(out.stdout.startsWith('0\n1\n'), `stdout starts with 0 and 1: ${JSON.stringify(out.stdout)}`);
      assert.ok('0\n1\n2\n3\n'.startsWith(out.stdout), `stdout is the first lines and nothing else: ${JSON.stringify(out.stdout)}`);
    });

    it('a segfault keeps the print before it and the fatal error report', async () => {
      const { out } = ok(await call(ctx, { code: CODE.segfault }));
      assert.equal(out.stdout, 'before crash\n');
      assert.equal(out.signal, 11);
      assert.equal(out.reason, 'signal');
      assert.equal(out.exit_code, -1);
      assert.equal(out.timed_out, false);
      assert.ok(out.stderr.includes('Fatal Python error: Segmentation fault'), `stderr: ${out.stderr}`);
      assert.ok(out.stderr.includes('File "main.py", line 3'), `stderr names main.py line 3: ${out.stderr}`);
    });

    // --- 2. Tails -------------------------------------------------------------

    it('past the output budget, stdout_tail and stderr_tail hold the ends', async () => {
      const { out } = ok(await call(ctx, { code: CODE.tails }));
      assert.equal(out.truncated, true);
      assert.equal(out.exit_code, 1);
      assert.ok(Buffer.byteLength(out.stdout) + Buffer.byteLength(out.stderr) <= MAX_OUTPUT_BYTES, 'within the budget');
      assert.equal(typeof out.stderr_tail, 'string', 'stderr_tail is present');
      assert.ok(out.stderr_tail.includes('ValueError: the error you need'), `stderr_tail: ${out.stderr_tail}`);
      assert.equal(typeof out.stdout_tail, 'string', 'stdout_tail is present');
      assert.ok(Buffer.byteLength(out.stdout_tail) <= TAIL_BYTES, `stdout_tail is ${Buffer.byteLength(out.stdout_tail)} bytes`);
      assert.ok(out.stdout_tail.endsWith('a\n'), 'stdout_tail ends where stdout ended');
      assert.match(out.stdout_tail, /^a+\n$/, 'stdout_tail is the end of the a line');
      assert.ok(Buffer.byteLength(out.stderr_tail) <= TAIL_BYTES);
    });

    it('a 5 MB print: the text item holds its head and tail; the whole answer fits in 1 MiB + 128 KiB', async () => {
      const result = await call(ctx, { code: 'print("x" * (5 << 20))' });
      const { out, cut } = ok(result);
      assert.equal(out.truncated, true);
      const kept = Buffer.byteLength(out.stdout);
      assert.ok(kept <= MAX_OUTPUT_BYTES && kept > MAX_OUTPUT_BYTES - 8, `structuredContent keeps ${kept} bytes`);
      assert.match(
        cut.stdout ?? '',
        /^this text shows the first \d+ and the last \d+ of the \d+ bytes of stdout \(MCP_EXEC_TEXT_OUTPUT_BYTES=32768\); structuredContent.stdout holds all/,
      );
      const text = Buffer.byteLength(result.content[0].text);
      assert.ok(text < 40_000, `the text item is ${text} bytes`);
      const whole = Buffer.byteLength(JSON.stringify(result));
      console.log(`# a 5 MB print: the whole answer is ${whole} bytes, its text item ${text}`);
      assert.ok(whole <= 1_048_576 + 131_072, `the whole answer is ${whole} bytes`);
    });

    it('a small run has no tail fields', async () => {
      const { out } = ok(await call(ctx, { code: 'import sys\nprint("small")\nprint("e", file=sys.stderr)' }));
      assert.equal(out.truncated, false);
      assert.equal(out.stdout, 'small\n');
      assert.equal(out.stderr, 'e\n');
      assert.equal('stdout_tail' in out, false, 'no stdout_tail');
      assert.equal('stderr_tail' in out, false, 'no stderr_tail');
      assert.equal('result' in out, false, 'no result (the last statement is a print call, whose value is None)');
    });

    // --- 3. Figures -----------------------------------------------------------

    it('plt.show() and a figure left open come back as two PNG images', async () => {
      const { out, extra } = ok(await call(ctx, { code: CODE.showThenOpen }));
      assert.equal(out.exit_code, 0, out.stderr);
      const images = pngImages(extra);
      assert.equal(images.length, 2, `two image items (shown + left open): ${brief(out)}`);
      assert.equal(out.images, 2);
      assert.equal(out.images_omitted, 0);
    });

    it('display() of a PIL image is an image; of anything else, its repr on stdout', async () => {
      const { out, extra } = ok(await call(ctx, { code: CODE.displayPil }));
      assert.equal(out.stdout, '42\n');
      const images = pngImages(extra);
      assert.equal(images.length, 1);
      assert.deepEqual([images[0].width, images[0].height], [40, 20], 'the PNG is the 40x20 image');
      assert.equal(out.images, 1);
      assert.equal(out.images_omitted, 0);
    });

    for (const [how, code] of [
      ['left open', CODE.thirtyOpen],
      ['shown with plt.show()', CODE.thirtyShown],
    ]) {
      it(`30 figures ${how}: 8 images, 22 omitted`, async () => {
        const { out, extra } = ok(await call(ctx, { code }));
        assert.equal(out.exit_code, 0, out.stderr);
        assert.equal(pngImages(extra).length, MAX_IMAGES, `image items: ${brief(out)}`);
        assert.equal(out.images, MAX_IMAGES);
        assert.equal(out.images_omitted, 30 - MAX_IMAGES);
      });
    }

    it('a 60x8-inch figure at dpi 200 comes back within 2000 px, its aspect ratio kept', async () => {
      const { out, extra } = ok(await call(ctx, { code: CODE.wideFigure }));
      assert.equal(out.exit_code, 0, out.stderr);
      const images = pngImages(extra);
      assert.equal(images.length, 1, `one image item: ${brief(out)}`);
      const { width, height } = images[0];
      assert.ok(width <= MAX_IMAGE_SIDE && height <= MAX_IMAGE_SIDE, `${width}x${height}`);
      assert.ok(width >= MAX_IMAGE_SIDE - 2, `as large as the bound lets it be: ${width}x${height}`);
      assert.ok(Math.abs(width / height - 60 / 8) < 0.05, `aspect ratio 7.5: ${width}x${height}`);
    });

    it('display() of a 3000x1000 PIL image comes back 2000x666', async () => {
      const { out, extra } = ok(await call(ctx, { code: CODE.widePil }));
      assert.equal(out.exit_code, 0, out.stderr);
      const images = pngImages(extra);
      assert.equal(images.length, 1, `one image item: ${brief(out)}`);
      assert.deepEqual([images[0].width, images[0].height], [2000, 666]);
    });

    it('an image past MCP_EXEC_MAX_IMAGE_BYTES is scaled down, not dropped', async () => {
      const { out, extra } = ok(await call(ctx, { code: CODE.noisyPil }));
      assert.equal(out.exit_code, 0, out.stderr);
      const images = pngImages(extra);
      assert.equal(images.length, 1, `one image item: ${brief(out)}`);
      assert.ok(images[0].bytes.length <= MAX_IMAGE_BYTES, `${images[0].bytes.length} bytes`);
      assert.ok(images[0].width < 800 && images[0].height < 800, `scaled: ${images[0].width}x${images[0].height}`);
      assert.equal(out.images, 1);
      assert.equal(out.images_omitted, 0);
    });

    it('a huge figure left open (8000x8000 px imshow) is scaled down, not dropped', async () => {
      const { out, extra } = ok(await call(ctx, { code: CODE.hugeOpen }));
      assert.equal(out.exit_code, 0, `exit 0: ${brief(out)}`);
      const images = pngImages(extra);
      assert.equal(images.length, 1, `one image item: ${brief(out)}`);
      assert.ok(images[0].bytes.length <= MAX_IMAGE_BYTES, `${images[0].bytes.length} bytes`);
      assert.equal(out.images, 1);
      assert.equal(out.images_omitted, 0);
    });

    it('a huge figure shown with display(fig) (8000x8000 px imshow) is scaled down, not dropped', async () => {
      const { out, extra } = ok(await call(ctx, { code: CODE.hugeDisplayed }));
      assert.equal(out.exit_code, 0, `exit 0: ${brief(out)}`);
      assert.equal(out.reason, undefined, `no abnormal end: ${brief(out)}`);
      const images = pngImages(extra);
      assert.equal(images.length, 1, `one image item: ${brief(out)}`);
      assert.ok(images[0].bytes.length <= MAX_IMAGE_BYTES, `${images[0].bytes.length} bytes`);
      assert.equal(out.images, 1);
      assert.equal(out.images_omitted, 0);
    });

    // --- 4. Files out ---------------------------------------------------------

    it('files under out/ come back as embedded resources, others do not', async () => {
      const { out, extra } = ok(await call(ctx, { code: CODE.outFiles }));
      assert.equal(out.exit_code, 0, out.stderr);
      const resources = extra.filter((item) => item.type === 'resource');
      assert.deepEqual(resources, [
        { type: 'resource', resource: { uri: 'file:///out/report.csv', mimeType: 'text/csv', text: 'a,b\n1,2\n' } },
        {
          type: 'resource',
          resource: {
            uri: 'file:///out/sub/blob.bin',
            mimeType: 'application/octet-stream',
            blob: Buffer.from(Array.from({ length: 256 }, (_, i) => i)).toString('base64'),
          },
        },
      ]);
      assert.ok(!JSON.stringify(extra).includes('notout'), 'nothing for notout.txt');
      assert.deepEqual(out.files, ['out/report.csv', 'out/sub/blob.bin']);
      assert.equal((out.files_omitted ?? []).length, 0);
      assert.equal(out.files_omitted_count ?? 0, 0);
      assert.equal(out.images ?? 0, 0);
    });

    it('out/ is there before the code runs: in a run, a call with files and a session cell', async () => {
      // The README's own lines, without making the folder first.
      const code =
        'open("out/report.csv", "w").write("a\\n1\\n")\n' +
        'import matplotlib.pyplot as plt\nplt.plot([1])\nplt.savefig("out/x.png")\nplt.close("all")';
      for (const more of [{}, { files: { 'in/a.txt': 'x' } }, { session: 'new' }]) {
        const { out } = ok(await call(ctx, { code, ...more }));
        assert.equal(out.exit_code, 0, `${JSON.stringify(more)}: ${out.stderr}`);
        assert.deepEqual(out.files, ['out/report.csv', 'out/x.png'], JSON.stringify(more));
      }
    });

    it('an out/ file past MCP_EXEC_MAX_OUT_BYTES comes back as a resource_link; the rest embedded', async () => {
      const { out, extra } = ok(await call(ctx, { code: CODE.outBig }));
      assert.equal(out.exit_code, 0, out.stderr);
      const uris = extra.filter((item) => item.type === 'resource').map((item) => item.resource.uri);
      assert.deepEqual(uris, ['file:///out/small.txt']);
      const small = extra.find((item) => item.type === 'resource').resource;
      assert.equal(small.text, 'ok');
      assert.deepEqual(out.files, ['out/small.txt', 'out/big.bin']);
      const link = extra.find((item) => item.type === 'resource_link');
      assert.equal(link?.name, 'out/big.bin', brief(extra));
      assert.equal(link.size, 52_428_800);
      assert.match(link.uri, /^mcp-exec:\/\/resource\/[0-9a-f]{32}\/out\/big\.bin$/);
      assert.equal(out.files_omitted_count, 0);
    });

    // --- 5. Files in ----------------------------------------------------------

    it('files: text and base64 inputs are written before the code runs', async () => {
      const files = { 'in/data.txt': 'hello input', 'b.bin': { base64: 'AAEC' } };
      const { out } = ok(await call(ctx, { code: CODE.inFiles, files }));
      assert.equal(out.stdout, 'hello input\n[0, 1, 2]\n');
      assert.equal(out.exit_code, 0);
    });

    it('files: every bad input is a tool error naming the path', async () => {
      const failures = [];
      for (const { what, files, names } of BAD_FILES) {
        const result = await call(ctx, { code: 'print("ran")', files });
        try {
          const text = toolError(result);
          for (const name of names) assert.ok(text.includes(name), `the message holds ${JSON.stringify(name)}: ${JSON.stringify(text)}`);
        } catch (err) {
          failures.push(`${what}: ${err.message}`);
        }
      }
      assert.deepEqual(failures, []);
    });

    // --- 6. Last expression ---------------------------------------------------

    it('the last expression comes back as result (a DataFrame.describe())', async () => {
      const { out } = ok(await call(ctx, { code: CODE.describe }));
      assert.equal(typeof out.result, 'string');
      assert.ok(out.result.includes('count') && out.result.includes('mean'), `result: ${out.result}`);
      assert.equal(out.stdout, '');
      assert.equal('result_truncated' in out && out.result_truncated, false, 'not truncated');
    });

    it('no result for an assignment or a None; "2" for 1 + 1', async () => {
      for (const code of ['x = 1', 'None']) {
        const { out } = ok(await call(ctx, { code }));
        assert.equal('result' in out, false, `no result for ${code}: ${brief(out)}`);
        assert.equal(out.stdout, '');
      }
      const { out } = ok(await call(ctx, { code: '1 + 1' }));
      assert.equal(out.result, '2');
      assert.equal(out.stdout, '');
    });

    it('a figure as the last expression is one image and no result', async () => {
      const { out, extra } = ok(await call(ctx, { code: CODE.figureLast }));
      assert.equal(pngImages(extra).length, 1, `one image, not sent again at the end: ${brief(out)}`);
      assert.equal(out.images, 1);
      assert.equal('result' in out, false, `no result: ${brief(out)}`);
    });

    it('a long result is cut at MCP_EXEC_MAX_RESULT_BYTES and says so', async () => {
      const { out } = ok(await call(ctx, { code: '"x" * 100000' }));
      assert.equal(out.result_truncated, true);
      const bytes = Buffer.byteLength(out.result);
      assert.ok(bytes <= MAX_RESULT_BYTES + 16 && bytes >= MAX_RESULT_BYTES - 16, `result is ${bytes} bytes`);
      assert.match(out.result, /^'x+$/);
    });

    // --- 7. Progress ----------------------------------------------------------

    it('with a progress token: increasing progress with the output so far', async () => {
      const got = [];
      const { value: result, notes } = await withProgressTap(ctx, () =>
        call(ctx, { code: CODE.progress }, { onprogress: (p) => got.push(p) }),
      );
      const { out } = ok(result);
      assert.equal(out.stdout, 'line 0\nline 1\nline 2\n');
      assert.ok(got.length >= 2, `at least 2 progress notifications: ${JSON.stringify(got)}`);
      // The server writes every progress notification before the response
      // (the tap sees them on the wire). The SDK dispatches a notification a
      // microtask after it reads it but a response at once, so one read in
      // the same chunk as the response finds its handler gone and never
      // reaches onprogress: the client's drop, at most the last one. What
      // onprogress saw is the wire's notifications from the first, in order.
      assert.ok(
        notes.length === got.length || notes.length === got.length + 1,
        `onprogress saw ${got.length} of the ${notes.length} notifications sent: ${JSON.stringify(notes)}`,
      );
      assert.deepEqual(
        got.map((p) => p.progress),
        notes.slice(0, got.length).map((n) => n.progress),
        'onprogress saw the notifications in the order sent',
      );
      assert.equal(new Set(notes.map((n) => n.progressToken)).size, 1, 'all carry the one token');
      for (let i = 1; i < got.length; i++) {
        assert.ok(got[i].progress > got[i - 1].progress, `progress strictly increases: ${JSON.stringify(got)}`);
      }
      const last = got.at(-1).message;
      assert.ok(/line [12]/.test(last), `the last message shows line 1 or 2: ${JSON.stringify(last)}`);
    });

    it('with a string progress token in _meta: notifications carry that token', async () => {
      const { value: result, notes } = await withProgressTap(ctx, () =>
        ctx.client.callTool(
          { name: 'exec', arguments: { code: CODE.progressShort }, _meta: { progressToken: 'tok-1' } },
          CallToolResultSchema,
          { timeout: CALL_TIMEOUT_MS },
        ),
      );
      ok(result);
      assert.ok(notes.length >= 1, 'at least one progress notification');
      assert.deepEqual([...new Set(notes.map((n) => n.progressToken))], ['tok-1']);
    });

    it('without a progress token: no progress notifications', async () => {
      const { value: result, notes } = await withProgressTap(ctx, () => call(ctx, { code: CODE.progressShort }));
      const { out } = ok(result);
      assert.equal(out.stdout, 'line 0\nline 1\n');
      assert.deepEqual(notes, []);
    });

    it('a 5000-line flood: progress messages stay small, all output comes back', async () => {
      const got = [];
      const { value: result } = await withProgressTap(ctx, () =>
        call(ctx, { code: CODE.flood }, { onprogress: (p) => got.push(p) }),
      );
      const { out } = ok(result);
      assert.equal(out.exit_code, 0);
      assert.equal(out.truncated, false);
      assert.equal(out.stdout, Array.from({ length: 5000 }, (_, i) => `flood ${i}\n`).join(''));
      assert.ok(got.length >= 1, 'progress during the 2.5 s sleep');
      for (const p of got) {
        assert.ok(Buffer.byteLength(p.message ?? '') <= 512, `a progress message of ${Buffer.byteLength(p.message ?? '')} bytes`);
      }
    });

    // --- The end ----------------------------------------------------------------

    it('no transport errors; the server stops cleanly', async () => {
      // The string token of a call the SDK did not start is unknown to it:
      // the SDK reports each such notification through onerror.
      const unexpected = transportErrors.filter((e) => !/unknown token/i.test(e));
      closedWith = await ctx.close();
      assert.deepEqual(unexpected, [], 'no transport errors');
      assert.deepEqual(closedWith, closed, `server stderr:\n${ctx.log().slice(-4000)}`);
    });
  });
}

// The numbers in the description and the image bounds follow the settings.
describe('image limits from the environment (stdio)', () => {
  let ctx;
  before(async () => {
    ctx = await connectStdio({ ...DEFAULT_ENV, MCP_EXEC_MAX_IMAGES: '3', MCP_EXEC_MAX_IMAGE_BYTES: '300000' });
    await ctx.client.listTools();
  }, { timeout: SETUP_TIMEOUT_MS });
  after(async () => {
    if (ctx) await ctx.close().catch(() => {});
  });

  test('MCP_EXEC_MAX_IMAGES=3, MCP_EXEC_MAX_IMAGE_BYTES=300000', { timeout: TEST_TIMEOUT_MS }, async () => {
    const { tools } = await ctx.client.listTools();
    const text = tools[0].description;
    assert.match(text, /at most 3\b/, text);
    assert.ok(text.includes('300000'), text);
    const code = 'import matplotlib.pyplot as plt\nfor i in range(5):\n    plt.figure(); plt.plot([i])\nplt.show()\n' + CODE.noisyPil.replace('display(', 'img = (') + '\ndisplay(img)';
    const { out, extra } = ok(await call(ctx, { code }));
    assert.equal(out.exit_code, 0, out.stderr);
    assert.equal(pngImages(extra).length, 3);
    assert.equal(out.images, 3);
    assert.equal(out.images_omitted, 3, 'two figures and the PIL image past the bound');

    const single = ok(await call(ctx, { code: CODE.noisyPil }));
    const images = pngImages(single.extra);
    assert.equal(images.length, 1, brief(single.out));
    assert.ok(images[0].bytes.length <= 300_000, `${images[0].bytes.length} bytes`);
  });
});
