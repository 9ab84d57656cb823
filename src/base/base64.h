// Base64 (RFC 4648, standard alphabet, padded): MCP carries images and
// binary files this way, and a call's input files may come so.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mcpexec {

std::string Base64Encode(std::string_view in);
// Strict: the standard alphabet, padding to a multiple of 4, nothing else
// (no whitespace); nullopt if malformed.
std::optional<std::string> Base64Decode(std::string_view in);

}  // namespace mcpexec
