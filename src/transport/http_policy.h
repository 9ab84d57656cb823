// The HTTP transport's policy decisions, kept free of any HTTP library so
// that they can be unit-tested: token comparison, the listen address, and
// the Host/Origin checks that stop DNS rebinding.
#pragma once

#include <string>

namespace mcpexec::http_policy {

// Constant-time comparison of a presented token with the configured one.
bool TokenMatches(const std::string& presented, const std::string& expected);
// Whether a request carries the token: in X-MCP-AUTH (the contract's
// header), or as `Authorization: Bearer <token>` (the one every MCP client
// can send; the scheme's name in any case). Both compared in constant time.
bool RequestHasToken(const std::string& x_mcp_auth, const std::string& authorization,
                     const std::string& expected);

struct Listen {
  std::string host;  // as given, without IPv6 brackets ("" = every interface)
  int port = 0;
  bool loopback = false;
};
// addr is HOST:PORT as validated by the configuration.
Listen ParseAddr(const std::string& addr);

// A literal loopback host: "localhost", "::1" (as a bare host, or bracketed
// with brackets = true), or a dotted-decimal IPv4 address in 127.0.0.0/8.
// Never a DNS name that merely starts with "127.": its owner decides where
// it points.
bool IsLoopbackHost(const std::string& host, bool brackets);

// Code mode over HTTP: with upstreams configured, a server that anyone
// beyond loopback reaches without a token hands them the upstreams' tools,
// called with the operator's credentials. "" when addr is loopback or a
// token is set; else why the start stops, and the two ways out.
std::string UpstreamsExposure(const std::string& addr, bool has_token);

// DNS-rebinding protection. Origin: absent is fine (not a browser); present,
// it must be listed (or, with no list and a loopback bind, be a loopback
// origin: http or https, a loopback host, an optional port, nothing else).
// Host: checked when bound to loopback, must name loopback.
bool OriginAllowed(const std::string& origin, const std::string& allowed_csv, bool loopback_bind);
bool HostAllowed(const std::string& host_header, bool loopback_bind);

}  // namespace mcpexec::http_policy
