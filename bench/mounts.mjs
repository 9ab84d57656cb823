// The user's data in a run (`mounts`): a 70 KB CSV read with pandas from a
// host folder mounted read-only (MCP_EXEC_MOUNTS), against the same CSV
// passed in the call's `files`, on one server over stdio, the two calls
// alternating so that both see the same machine. Besides the latency, the
// bytes of the call's arguments: what the model would have had to write.
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { connectMcpExec } from '../tests/client/mcp_client.mjs';

// 70 KB of CSV: 2,650 rows of a date, a city and two numbers.
function makeCsv() {
  const lines = ['date,city,temp_c,rain_mm'];
  for (let i = 0; i < 2650; i++) {
    const day = String((i % 28) + 1).padStart(2, '0');
    const month = String((Math.floor(i / 28) % 12) + 1).padStart(2, '0');
    lines.push(`2025-${month}-${day},city${String(i % 37).padStart(2, '0')},${((i * 7) % 350) / 10},${(i * 13) % 97}`);
  }
  return `${lines.join('\n')}\n`;
}

const QUERY = (where) =>
  `import pandas as pd\ndf = pd.read_csv(${JSON.stringify(where)})\nprint(len(df), round(df.temp_c.mean(), 3), int(df.rain_mm.sum()))\n`;

function percentile(sorted, p) {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (x) => Math.round(x * 100) / 100;
  return { n: sorted.length, p50_ms: round(percentile(sorted, 50)), p99_ms: round(percentile(sorted, 99)) };
}

export async function runMounts({ warmup, n }) {
  // Not under a name starting "mcp-exec-": the server refuses to mount its
  // own folders.
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-mount-'));
  await chmod(dir, 0o755);
  const csv = makeCsv();
  await writeFile(path.join(dir, 'weather.csv'), csv, { mode: 0o644 });
  const { client, serverLog } = await connectMcpExec({
    clientName: 'mcp-exec-bench-mounts',
    env: { MCP_EXEC_MOUNTS: `${dir}:/data:ro` },
  });
  const viaFiles = { code: QUERY('weather.csv'), files: { 'weather.csv': csv } };
  const viaMount = { code: QUERY('/data/weather.csv') };
  const server = client.getServerVersion();
  let expect;
  const call = async (args) => {
    const started = performance.now();
    const result = await client.callTool({ name: 'exec', arguments: args });
    const elapsed = performance.now() - started;
    const out = result.structuredContent;
    if (result.isError || out?.exit_code !== 0) throw new Error(`mounts: ${JSON.stringify(result)}`);
    expect ??= out.stdout;
    if (out.stdout !== expect) throw new Error(`mounts: ${out.stdout} where the other call printed ${expect}`);
    return elapsed;
  };
  const samples = { files: [], mount: [] };
  try {
    for (let i = 0; i < warmup; i++) {
      await call(viaFiles);
      await call(viaMount);
    }
    for (let i = 0; i < n; i++) {
      // Alternating, and which goes first swapped every other round.
      const order = i % 2 ? ['mount', 'files'] : ['files', 'mount'];
      for (const which of order) samples[which].push(await call(which === 'files' ? viaFiles : viaMount));
    }
  } catch (err) {
    err.message += `\nserver stderr:\n${serverLog()}`;
    throw err;
  } finally {
    await client.close();
    await rm(dir, { recursive: true, force: true });
  }
  const files = { ...stats(samples.files), argument_bytes: JSON.stringify(viaFiles).length };
  const mount = { ...stats(samples.mount), argument_bytes: JSON.stringify(viaMount).length };
  return {
    server,
    csv_bytes: csv.length,
    stdout: expect,
    files,
    mount,
    ratio_files_p50_over_mount_p50: Math.round((files.p50_ms / mount.p50_ms) * 100) / 100,
  };
}

export function printMounts(m) {
  console.log(
    `mounts: a ${(m.csv_bytes / 1024).toFixed(0)} KiB CSV read with pandas, in one run each (n ${m.mount.n}):\n` +
      `  from a read-only mount (MCP_EXEC_MOUNTS): p50 ${m.mount.p50_ms.toFixed(1)} / p99 ${m.mount.p99_ms.toFixed(1)} ms, ` +
      `arguments ${m.mount.argument_bytes} bytes\n` +
      `  passed in files:                          p50 ${m.files.p50_ms.toFixed(1)} / p99 ${m.files.p99_ms.toFixed(1)} ms, ` +
      `arguments ${m.files.argument_bytes} bytes\n` +
      `  files over mount at p50: ${m.ratio_files_p50_over_mount_p50}x; ` +
      `arguments ${Math.round(m.files.argument_bytes / m.mount.argument_bytes)}x the bytes`,
  );
}
