#include "transport/http_policy.h"

#include <strings.h>

#include <cstring>

#include "model/config.h"

namespace mcpexec::http_policy {

bool TokenMatches(const std::string& presented, const std::string& expected) {
  // Time depends on the expected token's length only, never on where the
  // first difference is.
  unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>((i < presented.size() ? presented[i] : 0) ^ expected[i]);
  }
  return diff == 0;
}

bool RequestHasToken(const std::string& x_mcp_auth, const std::string& authorization,
                     const std::string& expected) {
  const bool header = TokenMatches(x_mcp_auth, expected);
  bool bearer = false;
  if (authorization.size() > 7 && strncasecmp(authorization.c_str(), "Bearer ", 7) == 0) {
    size_t start = 7;
    while (start < authorization.size() && authorization[start] == ' ') ++start;
    bearer = TokenMatches(authorization.substr(start), expected);
  }
  return header || bearer;
}

namespace {

bool AllDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Four decimal octets 0-255 without leading zeros (a resolver may read
// "0127" as octal 87), the first one 127.
bool IsLoopbackIpv4(const std::string& s) {
  int octets = 0;
  size_t start = 0;
  for (;;) {
    size_t dot = s.find('.', start);
    std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!AllDigits(part) || part.size() > 3 || (part.size() > 1 && part[0] == '0')) return false;
    int v = std::stoi(part);
    if (v > 255 || (octets == 0 && v != 127)) return false;
    ++octets;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return octets == 4;
}

// A port as it may follow a host: decimal digits, at most 65535.
bool IsPort(const std::string& s) { return AllDigits(s) && s.size() <= 5 && std::stoi(s) <= 65535; }

// A loopback host with an optional ":port" (Host header, Origin authority).
bool IsLoopbackHostPort(const std::string& hp) {
  std::string host = hp, port;
  bool brackets = false;
  if (!hp.empty() && hp.front() == '[') {
    size_t end = hp.find(']');
    if (end == std::string::npos) return false;
    host = hp.substr(0, end + 1);
    std::string rest = hp.substr(end + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return false;
      port = rest.substr(1);
      if (!IsPort(port)) return false;
    }
    brackets = true;
  } else if (size_t colon = hp.find(':'); colon != std::string::npos) {
    host = hp.substr(0, colon);
    port = hp.substr(colon + 1);
    if (!IsPort(port)) return false;
  }
  return IsLoopbackHost(host, brackets);
}

}  // namespace

bool IsLoopbackHost(const std::string& host, bool brackets) {
  if (brackets) return host == "[::1]";
  return strcasecmp(host.c_str(), "localhost") == 0 || host == "::1" || IsLoopbackIpv4(host);
}

Listen ParseAddr(const std::string& addr) {
  Listen l;
  auto colon = addr.rfind(':');
  l.host = addr.substr(0, colon);
  l.port = std::stoi(addr.substr(colon + 1));
  if (l.host.size() >= 2 && l.host.front() == '[') l.host = l.host.substr(1, l.host.size() - 2);
  l.loopback = IsLoopbackHost(l.host, false);
  return l;
}

std::string UpstreamsExposure(const std::string& addr, bool has_token) {
  const Listen l = ParseAddr(addr);
  if (l.loopback || has_token) return "";
  return "MCP_EXEC_UPSTREAMS is set and this server would listen on " + addr +
         (l.host.empty() || l.host == "0.0.0.0" || l.host == "::" ? " (every interface)" : "") +
         ", beyond loopback, without MCP_EXEC_AUTH_TOKEN: anyone who reaches the port could "
         "call the upstreams' tools with the credentials they were given. Set "
         "MCP_EXEC_AUTH_TOKEN (clients send it as X-MCP-AUTH or Authorization: Bearer), or "
         "listen on loopback only (MCP_EXEC_ADDR=127.0.0.1:" +
         std::to_string(l.port) + ")";
}

bool OriginAllowed(const std::string& origin, const std::string& allowed_csv, bool loopback_bind) {
  if (origin.empty()) return true;  // not a browser
  if (!allowed_csv.empty()) {
    for (const std::string& item : CommaList(allowed_csv)) {
      if (item == "*" || item == origin) return true;
    }
    return false;
  }
  if (!loopback_bind) return false;
  // Browsers serialize an origin as scheme://host[:port] in lower case.
  for (const char* scheme : {"http://", "https://"}) {
    if (origin.rfind(scheme, 0) == 0) return IsLoopbackHostPort(origin.substr(strlen(scheme)));
  }
  return false;
}

bool HostAllowed(const std::string& host_header, bool loopback_bind) {
  if (!loopback_bind || host_header.empty()) return true;
  return IsLoopbackHostPort(host_header);
}

}  // namespace mcpexec::http_policy
