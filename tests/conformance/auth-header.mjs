// Preload for the conformance CLI: adds `X-MCP-AUTH: $MCP_EXEC_AUTH_TOKEN` to every
// HTTP request the harness makes: global fetch (the SDK client and most scenarios)
// and undici.request (dns-rebinding-protection) go through undici's process-wide
// global dispatcher, which this replaces; the header-validation scenarios of
// 2026-07-28 post through node:http, whose request() and get() this wraps.
// Usage: MCP_EXEC_AUTH_TOKEN=... NODE_OPTIONS="--import ./auth-header.mjs" node .../dist/index.js server ...
import http from 'node:http';
import { syncBuiltinESMExports } from 'node:module';
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

  // http.request(url[, options][, cb]) or http.request(options[, cb]).
  const wrap = (original) =>
    function (...args) {
      const i = typeof args[0] === 'string' || args[0] instanceof URL ? 1 : 0;
      if (typeof args[i] !== 'object' || args[i] === null) args.splice(i, 0, {});
      args[i] = { ...args[i], headers: withAuth(args[i].headers) };
      return original.apply(this, args);
    };
  http.request = wrap(http.request);
  http.get = wrap(http.get);
  syncBuiltinESMExports();
}
