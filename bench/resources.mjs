// The supervisor's memory while it keeps and serves a big resource: a run
// leaves a 256 MiB out/ file (a resource_link, streamed to the store on
// disk as it comes), then the client reads it whole (64 parts of 4 MiB).
// The supervisor's RSS (VmRSS of the server process, not the zygote's) is
// read after a warm-up call (the baseline), after the call that left the
// resource, and after the whole read; printed as differences and ratios to
// the baseline of the same run. Standalone:
//   node bench/resources.mjs
import { readFile } from 'node:fs/promises';

import { connectMcpExec } from '../tests/client/mcp_client.mjs';

const MIB = 1 << 20;
const SIZE_MIB = 256;

async function rssKib(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
}

export async function runResources() {
  const { client, transport, serverLog } = await connectMcpExec({
    clientName: 'mcp-exec-bench-resources',
    // The run's disk holds the file before it is streamed out.
    env: { MCP_EXEC_DISK_LIMIT_MB: String(SIZE_MIB + 64), MCP_EXEC_MEMORY_LIMIT_MB: '1024' },
  });
  const pid = transport.pid;
  const call = async (code) => {
    const result = await client.callTool({ name: 'exec', arguments: { code, timeout_s: 120 } }, undefined, {
      timeout: 180_000,
    });
    if (result.isError || result.structuredContent?.exit_code !== 0) {
      throw new Error(`resources: ${JSON.stringify(result).slice(0, 2000)}\n${serverLog()}`);
    }
    return result;
  };
  try {
    for (let i = 0; i < 3; i++) await call('print(1)');
    const baseline = await rssKib(pid);
    const started = performance.now();
    const result = await call(
      `import os\nos.makedirs("out", exist_ok=True)\nwith open("out/big.bin", "wb") as f:\n` +
        `    for _ in range(${SIZE_MIB}):\n        f.write(os.urandom(${MIB}))`,
    );
    const callMs = performance.now() - started;
    const link = result.content.find((c) => c.type === 'resource_link');
    if (!link || link.size !== SIZE_MIB * MIB) throw new Error(`no 256 MiB link: ${JSON.stringify(result.content)}`);
    const kept = await rssKib(pid);
    let bytes = 0;
    let parts = 0;
    const readStarted = performance.now();
    for (let next = link.uri; next; parts++) {
      const read = await client.readResource({ uri: next }, { timeout: 60_000 });
      for (const c of read.contents) bytes += c.blob ? Buffer.from(c.blob, 'base64').length : Buffer.byteLength(c.text);
      next = read._meta?.['mcp-exec/next'];
    }
    const readMs = performance.now() - readStarted;
    if (bytes !== SIZE_MIB * MIB) throw new Error(`read ${bytes} bytes of ${SIZE_MIB * MIB}`);
    const afterRead = await rssKib(pid);
    return { baseline_kib: baseline, kept_kib: kept, after_read_kib: afterRead, call_ms: callMs, read_ms: readMs, parts };
  } finally {
    await client.close();
  }
}

export function printResources(r) {
  const mib = (kib) => (kib / 1024).toFixed(1);
  console.log(
    `resources: a ${SIZE_MIB} MiB out/ file kept as a resource_link and read whole (${r.parts} parts)\n` +
      `  supervisor RSS: baseline ${mib(r.baseline_kib)} MiB; keeping it ${mib(r.kept_kib)} MiB ` +
      `(+${mib(r.kept_kib - r.baseline_kib)} MiB, ${(r.kept_kib / r.baseline_kib).toFixed(2)}x); ` +
      `after the whole read ${mib(r.after_read_kib)} MiB (+${mib(r.after_read_kib - r.baseline_kib)} MiB, ` +
      `${(r.after_read_kib / r.baseline_kib).toFixed(2)}x)\n` +
      `  the call ${r.call_ms.toFixed(0)} ms; the read ${r.read_ms.toFixed(0)} ms`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) printResources(await runResources());
