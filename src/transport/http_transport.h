// MCP over HTTP: the streamable HTTP transport at /mcp (protocol 2025-03-26
// and later) and the legacy HTTP+SSE transport of 2024-11-05 (GET on any
// path opens the stream, POSTs go to the endpoint it announces). Both share
// auth, DNS-rebinding protection, CORS for allowed origins, limits,
// sessions, /healthz, /readyz and /metrics. The HTTP server underneath is
// transport/http_server.h (Boost.Beast).
#pragma once

#include <string>

#include "base/config.h"
#include "protocol/health.h"
#include "protocol/mcp_session.h"
#include "transport/http_policy.h"

namespace mcpexec {

// Serves until a termination signal arrives on signal_fd; then stops taking
// work, lets running calls finish for the grace period, ends the rest with
// an answer to each and returns 0. Returns 1 (after logging why) if it
// cannot listen.
int ServeHttp(ToolBackend& tools, ServerHealth& health, const Config& config, int signal_fd);

}  // namespace mcpexec
