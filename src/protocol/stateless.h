// The vocabulary of MCP revision 2026-07-28, the stateless era, as pure
// functions: the checks of a request's _meta envelope, version and method,
// and what every result of the era carries. McpSession and the HTTP
// transport apply them; nothing here holds state. Which era a message is
// of, the versions and the era's methods: protocol/eras.h.
//
// Spec: docs/specification/2026-07-28/basic/index.mdx (per-request fields,
// error codes, resultType), basic/versioning.mdx, server/discover.mdx,
// server/utilities/caching.mdx.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "protocol/eras.h"

namespace mcpexec::stateless {

inline constexpr const char* kVersion = eras::kStatelessVersion;

// The request's _meta keys, and the result's and notifications'.
inline constexpr const char* kMetaProtocolVersion = eras::kMetaProtocolVersion;
inline constexpr char kMetaClientCapabilities[] = "io.modelcontextprotocol/clientCapabilities";
inline constexpr char kMetaClientInfo[] = "io.modelcontextprotocol/clientInfo";
inline constexpr char kMetaLogLevel[] = "io.modelcontextprotocol/logLevel";
inline constexpr char kMetaServerInfo[] = "io.modelcontextprotocol/serverInfo";
inline constexpr char kMetaSubscriptionId[] = "io.modelcontextprotocol/subscriptionId";

// The revision's error codes (basic/index.mdx "Error Codes").
constexpr int kHeaderMismatch = -32020;
constexpr int kMissingRequiredClientCapability = -32021;
constexpr int kUnsupportedProtocolVersion = -32022;

// What a request of the era is refused with: the JSON-RPC error (with the
// request's own id) and the HTTP status it goes with.
struct Rejection {
  int http_status;
  nlohmann::json response;
};

// The _meta envelope every request of the era carries: protocolVersion a
// string, clientCapabilities an object (both required), clientInfo an
// object with string name and version, logLevel one of the eight levels.
// -32602 naming each missing and each invalid key.
std::optional<Rejection> CheckEnvelope(const nlohmann::json& id, const nlohmann::json& params);

// -32022 for any version but 2026-07-28, with data {supported, requested};
// a 2025 version is served after initialize, and the message says so.
std::optional<Rejection> CheckVersion(const nlohmann::json& id, const std::string& version);

// -32601 (HTTP 404) for a method the era does not serve here
// (eras::kStatelessMethods).
std::optional<Rejection> CheckMethod(const nlohmann::json& id, const std::string& method);

// The three above in order: what a request of the era is refused with
// where no transport headers take part (stdio).
std::optional<Rejection> CheckRequest(const nlohmann::json& id, const std::string& method,
                                      const nlohmann::json& params);

// {name, title, version}: in initialize's result and in every result of
// the era (_meta io.modelcontextprotocol/serverInfo).
nlohmann::json ServerInfo();

// A result of the era: resultType "complete" and the server's info in _meta
// (kept beside any _meta the result already has).
nlohmann::json Complete(nlohmann::json result);

// The caching hints of discover and the lists (server/utilities/caching.mdx).
nlohmann::json WithCacheHints(nlohmann::json result, int64_t ttl_ms, const std::string& scope);

}  // namespace mcpexec::stateless
