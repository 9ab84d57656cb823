// The escape suite (tests/escape/*.py) inside the real image, with two host
// folders mounted (MCP_EXEC_MOUNTS), run as the README runs it (read-only root, no capabilities, no_new_privs, uid 65532,
// the runtime's default seccomp profile, --memory 256m --pids-limit 128
// --cpus 1), with the image's own Python (3.11 on bookworm, 3.13 on trixie)
// running every snippet. The server adapts to what the container allows
// (podman's default profile lets it make user, network and mount
// namespaces; Docker's does not, which the host harness's "docker" posture
// reproduces): snippets of the "docker" posture, or of every posture, run
// here. The same header rules as tests/integration/escape_test.cc (see
// tests/escape/README.md); what only the host can check (processes left
// after a run, as the host sees them) stays with that harness.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, readdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';

import { brief, connectMcpExec } from '../client/mcp_client.mjs';
import { POSTURE_ARGS } from './posture.mjs';

const IMAGE = process.env.MCP_EXEC_IMAGE;
const SUITE = process.env.MCP_EXEC_IMAGE_SUITE || 'trixie';
const PROFILE = process.env.MCP_EXEC_IMAGE_PROFILE || "podman's default";
assert.ok(IMAGE, 'MCP_EXEC_IMAGE names the image (scripts/check-image sets it)');
const ESCAPE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../escape');
const SIGNALS = { SIGSYS: 31, SIGKILL: 9, SIGSEGV: 11, SIGABRT: 6, SIGXCPU: 24 };

function parseCase(file) {
  const text = readFileSync(path.join(ESCAPE_DIR, file), 'utf8');
  const c = { file, code: text, expect: 'pass', timeout: 20, runs: 1, postures: null, distinct: false };
  for (const line of text.split('\n')) {
    if (!line.startsWith('#')) break;
    const m = /^#\s*([a-z-]+):\s*(.*)$/.exec(line);
    if (!m) continue;
    const [, key, value] = m;
    if (key === 'expect') c.expect = value.trim();
    if (key === 'timeout') c.timeout = Number(value);
    if (key === 'repeat') c.runs = Number(value);
    if (key === 'posture') c.postures = value.trim().split(/\s+/);
    if (key === 'stdin') c.stdin = value;
    if (key === 'distinct') c.distinct = value.trim() !== '';
    if (key === 'upstreams') c.upstreams = value.trim() !== '';
    if (key === 'prelude') {
      c.code = readFileSync(path.join(ESCAPE_DIR, `_prelude_${value.trim()}.py`), 'utf8') + '\n' + c.code;
    }
  }
  return c;
}

const cases = readdirSync(ESCAPE_DIR)
  .filter((f) => f.endsWith('.py') && !f.startsWith('_'))
  .sort()
  .map(parseCase);

function check(c, out) {
  const report = `${c.file}: ${brief(out)}`;
  assert.equal(out.stdout.includes('ESCAPED'), false, report);
  if (c.expect === 'pass') {
    assert.equal(out.exit_code, 0, report);
    assert.ok(`\n${out.stdout}`.includes('\nPASS'), report);
  } else if (c.expect.startsWith('killed ')) {
    assert.equal(out.exit_code, -1, report);
    assert.equal(out.signal, SIGNALS[c.expect.slice(7)], report);
  } else if (c.expect.startsWith('reason ')) {
    assert.equal(out.reason, c.expect.slice(7), report);
  } else if (c.expect === 'timed_out') {
    assert.equal(out.timed_out, true, report);
    assert.equal(out.exit_code, -1, report);
  } else {
    assert.fail(`unknown expectation in ${c.file}: ${c.expect}`);
  }
}

// The host folders every snippet runs with, as the host harness mounts them
// (tests/integration/postures.h, PrepareMountFixture: the fs_mount_*
// snippets know these paths): data/ read-only and results/ read-write, at
// the same path in the container and in runs; secret/ beside them in no
// volume. The link to the server's binary points at secret/ here: the
// image's binary is under /usr, which runs may read.
const MOUNT_BASE = '/var/tmp/mcp-exec-test-mounts';
let tmpCount = 0;
function mountFixture() {
  for (const d of ['', '/data', '/data/sub', '/results', '/secret']) {
    mkdirSync(MOUNT_BASE + d, { recursive: true });
    chmodSync(MOUNT_BASE + d, d === '/secret' || d === '' ? 0o755 : 0o1777);
  }
  let csv = 'city,year,rain_mm\n';
  for (let i = 0; i < 2000; i++) csv += `city${i % 40},${1990 + (i % 30)},${i % 97}\n`;
  const files = { '/data/rain.csv': csv, '/data/sub/note.txt': 'a note\n', '/secret/token.txt': 'TOKEN-OUTSIDE-THE-MOUNT\n' };
  // Written beside the fixture's top and renamed into place, as the host
  // side's tests do (tests/integration/postures.h): their runs read these
  // files side by side with this suite and must never see one half written,
  // nor a temporary name in a folder they list.
  const tmp = () => `${MOUNT_BASE}/.tmp-${process.pid}-${tmpCount++}`;
  for (const [f, text] of Object.entries(files)) {
    const t = tmp();
    writeFileSync(t, text);
    chmodSync(t, 0o666);
    renameSync(t, MOUNT_BASE + f);
  }
  const links = {
    link_shadow: '/etc/shadow',
    link_secret: `${MOUNT_BASE}/secret/token.txt`,
    link_secret_dir: '../secret',
    link_server: `${MOUNT_BASE}/secret/token.txt`,
  };
  for (const [name, target] of Object.entries(links)) {
    const t = tmp();
    symlinkSync(target, t);
    renameSync(t, `${MOUNT_BASE}/data/${name}`);
  }
  const data = `${MOUNT_BASE}/data`, results = `${MOUNT_BASE}/results`;
  return ['-v', `${data}:${data}:ro`, '-v', `${results}:${results}`,
    '-e', `MCP_EXEC_MOUNTS=${data}:${data}:ro,${results}:${results}:rw`];
}

describe(`the escape suite in ${IMAGE} (${SUITE}, ${PROFILE} seccomp profile), in the real container`, () => {
  let conn;
  let name;
  let n = 0;
  const start = async () => {
    name = `mcp-exec-test-${process.pid}-escape-${n++}`;
    conn = await connectMcpExec({
      command: 'podman',
      args: ['run', '--rm', '-i', '--name', name, ...POSTURE_ARGS, ...mountFixture(), IMAGE],
      timeoutMs: 120_000,
    });
  };
  const stop = async () => {
    await conn?.client.close();
    spawnSync('podman', ['rm', '-f', '--ignore', name]);
  };
  before(start);
  after(stop);

  for (const c of cases) {
    // The channel snippets need an upstream MCP server (server-everything on
    // Node), which the image does not ship; the host harness runs them in
    // the docker posture.
    const skip = c.upstreams
      ? 'needs an upstream MCP server (Node), not in the image; tests/integration/escape_test.cc runs it'
      : c.postures && !c.postures.includes('docker')
        ? `posture: ${c.postures.join(' ')}`
        : false;
    it(c.file, { skip }, async () => {
      const seen = new Set();
      for (let run = 0; run < c.runs; run++) {
        const args = { code: c.code, timeout_s: c.timeout };
        if (c.stdin) args.stdin = c.stdin;
        const res = await conn.client.callTool({ name: 'exec', arguments: args }, undefined, {
          timeout: (c.timeout + 30) * 1000,
        });
        assert.equal(res.isError, false, `${c.file}: ${brief(res)}`);
        const out = res.structuredContent;
        check(c, out);
        if (c.distinct) {
          const lines = out.stdout.split('\n').filter((l) => l.startsWith('DISTINCT '));
          assert.ok(lines.length > 0, `${c.file}: no DISTINCT line`);
          for (const l of lines) {
            assert.ok(!seen.has(l), `${c.file}: an earlier run printed the same: ${l}`);
            seen.add(l);
          }
        }
      }
      // The server and its sandbox still work after the snippet.
      const still = await conn.client.callTool({ name: 'exec', arguments: { code: "print('still here')" } });
      assert.equal(still.structuredContent?.stdout, 'still here\n', `${c.file} left the server broken: ${brief(still)}`);
    });
  }
});
