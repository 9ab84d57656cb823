// Connects the v2 TypeScript SDK client (@modelcontextprotocol/client, which
// speaks MCP 2026-07-28) to mcp-exec: over stdio (a spawned server) or to a
// server from startHttpServer() over streamable HTTP. mode: the client's
// versionNegotiation mode ('legacy', 'auto', or { pin: '2026-07-28' }).
// Shared by the v2 client tests and the benchmark's eras.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { serverBin, serverEnvironment } from './mcp_client.mjs';

export const STATELESS_VERSION = '2026-07-28';

function newClient(name, mode) {
  return new Client({ name, version: '0.0.0' }, { versionNegotiation: { mode } });
}

/** Returns { client, log(), close() } for a spawned server over stdio. */
export async function connectV2Stdio(name, mode, env = {}) {
  const transport = new StdioClientTransport({
    command: serverBin,
    args: [],
    env: { ...serverEnvironment(), ...env },
    stderr: 'pipe',
  });
  let log = '';
  transport.stderr?.setEncoding('utf8');
  transport.stderr?.on('data', (chunk) => {
    log += chunk;
  });
  const client = newClient(name, mode);
  try {
    await client.connect(transport);
  } catch (err) {
    await client.close().catch(() => {});
    err.message += `\nserver stderr:\n${log}`;
    throw err;
  }
  return { client, log: () => log, close: () => client.close() };
}

/** Returns { client, log(), close() } for a server from startHttpServer(). */
export async function connectV2Http(server, name, mode) {
  const client = newClient(name, mode);
  await client.connect(new StreamableHTTPClientTransport(server.url));
  return { client, log: server.log, close: () => client.close() };
}
