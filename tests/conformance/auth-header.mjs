// Preload for the conformance CLI: adds `X-MCP-AUTH: $MCP_EXEC_AUTH_TOKEN` to every
// HTTP request the harness makes (global fetch, used by the SDK client and most
// scenarios, and undici.request, used by dns-rebinding-protection): both go
// through undici's process-wide global dispatcher, which this replaces.
// Usage: MCP_EXEC_AUTH_TOKEN=... NODE_OPTIONS="--import ./auth-header.mjs" npx conformance server ...
import { Agent, setGlobalDispatcher } from 'undici';

const token = process.env.MCP_EXEC_AUTH_TOKEN;
if (token) {
  const withAuth = (headers) => {
    if (headers == null) return { 'x-mcp-auth': token };
    if (Array.isArray(headers)) return [...headers, 'x-mcp-auth', token];
    if (typeof headers[Symbol.iterator] === 'function') return [...[...headers].flat(), 'x-mcp-auth', token];
    return { ...headers, 'x-mcp-auth': token };
  };
  const agent = new Agent();
  const dispatch = agent.dispatch.bind(agent);
  agent.dispatch = (opts, handler) => dispatch({ ...opts, headers: withAuth(opts.headers) }, handler);
  setGlobalDispatcher(agent);
}
