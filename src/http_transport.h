// MCP over HTTP, with cpp-httplib: the streamable HTTP transport at /mcp
// (protocol 2025-03-26 and later) and the legacy HTTP+SSE transport of
// 2024-11-05 (GET on any path opens the stream, POSTs go to the endpoint it
// announces). Both share auth, DNS-rebinding protection, limits, sessions,
// /healthz, /readyz and /metrics.
#pragma once

#include <string>

#include "config.h"
#include "exec_service.h"

namespace mcpexec {

// Serves until a termination signal arrives on signal_fd; then stops
// accepting, lets running calls finish for the grace period, ends the rest
// and returns 0. Returns 1 (after logging why) if it cannot listen.
int ServeHttp(ExecService& service, const Config& config, int signal_fd);

namespace http_policy {

// Constant-time comparison of a presented token with the configured one.
bool TokenMatches(const std::string& presented, const std::string& expected);

struct Listen {
  std::string host;  // as given ("" = every interface)
  int port = 0;
  bool loopback = false;
};
Listen ParseAddr(const std::string& addr);

// DNS-rebinding protection. Origin: absent is fine (not a browser); present,
// it must be listed (or, with no list and a loopback bind, be a loopback
// origin). Host: checked when bound to loopback, must name loopback.
bool OriginAllowed(const std::string& origin, const std::string& allowed_csv, bool loopback_bind);
bool HostAllowed(const std::string& host_header, bool loopback_bind);

}  // namespace http_policy

}  // namespace mcpexec
