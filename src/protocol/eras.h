// The two eras of MCP this server speaks, in one place: their versions, the
// methods of the stateless one, and which era a message is of. The
// session's dispatch, the HTTP transport's checks and the upstream client
// (code mode) all read these.
//
// - The 2025 revisions (2024-11-05 .. 2025-11-25): a handshake (initialize)
//   fixes the version for the connection, then requests carry no envelope.
// - 2026-07-28, the stateless era: no handshake; every request names its
//   version and the client's capabilities in params._meta.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace mcpexec {

enum class Era { kLegacy, kStateless };

namespace eras {

inline constexpr char kStatelessVersion[] = "2026-07-28";
// Newest first; the first is what initialize offers a client asking for
// a version this server does not know.
inline constexpr std::array<std::string_view, 4> kLegacyVersions = {"2025-11-25", "2025-06-18",
                                                                    "2025-03-26", "2024-11-05"};
// The request _meta key that names a stateless request's version.
inline constexpr char kMetaProtocolVersion[] = "io.modelcontextprotocol/protocolVersion";

// The methods the stateless era serves here; anything else, the methods the
// revision removed (initialize, ping, logging/setLevel, resources/subscribe
// ...) included, is -32601 (404 over HTTP). The session's table for the era
// holds exactly these (a unit test checks).
inline constexpr std::array<std::string_view, 12> kStatelessMethods = {
    "server/discover",      "tools/list",     "tools/call",     "prompts/list",
    "prompts/get",          "resources/list", "resources/read", "resources/templates/list",
    "subscriptions/listen", "tasks/get",      "tasks/cancel",   "tasks/update"};

bool IsLegacyVersion(std::string_view version);
bool IsStatelessMethod(std::string_view method);
// The version initialize settles on: the requested one when it is a 2025
// revision this server speaks, else the newest.
std::string NegotiateLegacyVersion(const std::string& requested);
// Every version this server speaks: 2026-07-28 first, then the 2025 ones.
std::vector<std::string> AllSupportedVersions();
// The 2025 ones, comma-separated (for messages and the HTTP header check).
std::string LegacyVersionList();

// A message is of the stateless era when its params._meta names a protocol
// version; else when the HTTP MCP-Protocol-Version header (version_header,
// null on stdio) is 2026-07-28 or later (its envelope is then missing, which
// the era's checks refuse); else it is of the 2025 era.
Era Classify(const nlohmann::json& msg, const std::string* version_header);

}  // namespace eras
}  // namespace mcpexec
