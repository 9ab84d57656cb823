#include "protocol/stateless.h"

#include <array>
#include <string_view>
#include <utility>

#include "base/version.h"
#include "protocol/jsonrpc.h"

namespace mcpexec::stateless {

using json = nlohmann::json;

namespace {

constexpr std::array<std::string_view, 8> kLogLevels = {"debug", "info",     "notice", "warning",
                                                        "error", "critical", "alert",  "emergency"};

// The keys of the envelope that are missing and those that are there but
// wrong, each by its name.
void InspectEnvelope(const json& meta, std::vector<std::string>* missing,
                     std::vector<std::string>* invalid) {
  if (!meta.contains(kMetaProtocolVersion)) {
    missing->push_back(kMetaProtocolVersion);
  } else if (!meta[kMetaProtocolVersion].is_string()) {
    invalid->push_back(kMetaProtocolVersion);
  }
  if (!meta.contains(kMetaClientCapabilities)) {
    missing->push_back(kMetaClientCapabilities);
  } else if (!meta[kMetaClientCapabilities].is_object()) {
    invalid->push_back(kMetaClientCapabilities);
  }
  if (meta.contains(kMetaClientInfo)) {
    const json& info = meta[kMetaClientInfo];
    if (!info.is_object() || !info.contains("name") || !info["name"].is_string() ||
        !info.contains("version") || !info["version"].is_string()) {
      invalid->push_back(kMetaClientInfo);
    }
  }
  if (meta.contains(kMetaLogLevel)) {
    const json& level = meta[kMetaLogLevel];
    bool known = false;
    for (std::string_view l : kLogLevels) known = known || (level.is_string() && level == l);
    if (!known) invalid->push_back(kMetaLogLevel);
  }
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::optional<Rejection> CheckEnvelope(const json& id, const json& params) {
  if (!params.is_object() || !params.contains("_meta") || !params["_meta"].is_object()) {
    return Rejection{400, jsonrpc::Error(id, jsonrpc::kInvalidParams,
                                         "params._meta is missing or not an object: a request of "
                                         "protocol 2026-07-28 carries " +
                                             std::string(kMetaProtocolVersion) + " and " +
                                             kMetaClientCapabilities + " there")};
  }
  std::vector<std::string> missing, invalid;
  InspectEnvelope(params["_meta"], &missing, &invalid);
  if (missing.empty() && invalid.empty()) return std::nullopt;
  std::string message = "params._meta:";
  if (!missing.empty()) message += " missing " + Join(missing) + ";";
  if (!invalid.empty()) message += " invalid " + Join(invalid) + ";";
  message.pop_back();
  json response = jsonrpc::Error(id, jsonrpc::kInvalidParams, message);
  json data = json::object();
  if (!missing.empty()) data["missing"] = missing;
  if (!invalid.empty()) data["invalid"] = invalid;
  response["error"]["data"] = std::move(data);
  return Rejection{400, std::move(response)};
}

std::optional<Rejection> CheckVersion(const json& id, const std::string& version) {
  if (version == kVersion) return std::nullopt;
  std::string message = "unsupported protocol version " + version + ": this server speaks " +
                        kVersion + " without a handshake";
  if (eras::IsLegacyVersion(version)) message += ", and " + version + " after initialize";
  json response = jsonrpc::Error(id, kUnsupportedProtocolVersion, message);
  response["error"]["data"] = {{"supported", eras::AllSupportedVersions()}, {"requested", version}};
  return Rejection{400, std::move(response)};
}

std::optional<Rejection> CheckMethod(const json& id, const std::string& method) {
  if (eras::IsStatelessMethod(method)) return std::nullopt;
  return Rejection{
      404, jsonrpc::Error(id, jsonrpc::kMethodNotFound,
                          "method not found in protocol " + std::string(kVersion) + ": " + method)};
}

std::optional<Rejection> CheckRequest(const json& id, const std::string& method,
                                      const json& params) {
  if (auto refused = CheckEnvelope(id, params)) return refused;
  if (auto refused = CheckVersion(id, params["_meta"][kMetaProtocolVersion].get<std::string>()))
    return refused;
  return CheckMethod(id, method);
}

json ServerInfo() {
  return {{"name", "mcp-exec"}, {"title", "mcp-exec"}, {"version", MCP_EXEC_VERSION}};
}

json Complete(json result) {
  if (!result.is_object()) result = json::object();
  result["resultType"] = "complete";
  if (!result.contains("_meta") || !result["_meta"].is_object()) result["_meta"] = json::object();
  result["_meta"][kMetaServerInfo] = ServerInfo();
  return result;
}

json WithCacheHints(json result, int64_t ttl_ms, const std::string& scope) {
  result["ttlMs"] = ttl_ms;
  result["cacheScope"] = scope;
  return result;
}

}  // namespace mcpexec::stateless
