// Connects the official MCP TypeScript SDK client to a spawned mcp-exec over
// stdio. Shared by the SDK tests (sdk_stdio.test.mjs) and the benchmark
// (bench/bench.mjs), so that both use the one SDK version pinned here.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The server binary: $MCP_EXEC_BIN, else the build tree's. */
export const serverBin = process.env.MCP_EXEC_BIN || path.resolve(here, '../../build/mcp-exec');

// The SDK passes only a few variables (HOME, PATH, ...) to the server. Forward
// the server's own settings, and the OpenBLAS kernel selection that some CPUs
// need (the server hands those two on to its Python runtime).
function serverEnvironment() {
  const env = getDefaultEnvironment();
  for (const [name, value] of Object.entries(process.env)) {
    if (name.startsWith('MCP_EXEC_') || name === 'OPENBLAS_CORETYPE' || name === 'OPENBLAS_L2_SIZE') {
      env[name] = value;
    }
  }
  return env;
}

// The server warms its Python runtime (1-2 s) before it answers initialize.
const INITIALIZE_TIMEOUT_MS = 20_000;

/**
 * Spawns the server and completes the MCP initialize handshake.
 * Returns the client, its transport, and serverLog(): everything the server
 * wrote to stderr so far (JSON lines), for assertions and failure reports.
 */
export async function connectMcpExec({ clientName = 'mcp-exec-sdk-client' } = {}) {
  const transport = new StdioClientTransport({
    command: serverBin,
    env: serverEnvironment(),
    stderr: 'pipe',
  });
  // Drain stderr as it comes: an unread pipe would eventually block the server.
  let log = '';
  transport.stderr.setEncoding('utf8');
  transport.stderr.on('data', (chunk) => {
    log += chunk;
  });
  const client = new Client({ name: clientName, version: '0.0.0' });
  try {
    await client.connect(transport, { timeout: INITIALIZE_TIMEOUT_MS });
  } catch (err) {
    await client.close();
    err.message += `\nserver: ${serverBin}\nserver stderr:\n${log}`;
    throw err;
  }
  return { client, transport, serverLog: () => log };
}
