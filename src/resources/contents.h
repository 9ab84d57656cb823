// What a resources/read carries: a stored resource read in parts (their
// size, count and URIs), one contents item (text or a base64 blob), and the
// MIME type a file is served with. The exec tool's results name the same
// parts when they link to a resource (tool/contract_result.cc).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace mcpexec {

// The MIME type an out/ file is returned with, from its name.
std::string MimeTypeForPath(const std::string& path);

// A stored resource is read in parts of at most this many bytes, each one
// resources/read: the official SDK's stdio client drops a message past
// 10 MiB, and a part is at most 4/3 of this once base64 or escaped.
constexpr int64_t kResourcePartBytes = 4 << 20;
// How many parts a resource of `size` bytes is read in (1 for an empty one).
int64_t ResourceParts(int64_t size);
// The URI of part n (1-based) of a resource: "<uri>?part=n".
std::string ResourcePartUri(const std::string& uri, int64_t part);
// One contents item of resources/read: text when the bytes are UTF-8 that
// costs no more escaped than base64 would, else a base64 blob.
nlohmann::json ResourceContentsItem(const std::string& uri, const std::string& mime,
                                    const std::string& data);

}  // namespace mcpexec
