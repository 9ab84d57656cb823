#include "resources/reads.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "base/log.h"
#include "base/text.h"
#include "resources/contents.h"

namespace mcpexec {

using json = nlohmann::json;

namespace {

// Where part k ends (k parts in): k x kResourcePartBytes, moved back to the
// start of a UTF-8 character (at most 3 bytes), so that a text resource's
// parts are text each; the last ends at the end.
int64_t PartEnd(int fd, int64_t k, int64_t size) {
  int64_t at = k * kResourcePartBytes;
  if (at >= size) return size;
  std::string probe;
  if (!ResourceStore::ReadRange(fd, at - 3, at + 1, &probe)) return at;
  for (int back = 0; back < 3 && (static_cast<unsigned char>(probe[3 - back]) & 0xC0) == 0x80;
       ++back) {
    --at;
  }
  return at;
}

}  // namespace

// `uri`, or `uri?part=N` (1-based) for a resource read in parts: each read
// carries at most kResourcePartBytes of it, and its _meta says which part
// it is, of how many, and the next one's URI.
std::optional<Resource> StoreReader::Read(const std::string& uri) {
  ResourceStore* store = store_;
  if (!store) return std::nullopt;
  std::string base = uri;
  int64_t part = 1;
  if (const size_t q = uri.rfind("?part="); q != std::string::npos) {
    base = uri.substr(0, q);
    if (!ParseDecimal(uri.substr(q + 6), &part) || part < 1) return std::nullopt;
  }
  auto found = store->Open(base);
  const int64_t parts = found ? ResourceParts(found->first.size) : 0;
  if (!found || part > parts) {
    log::Info("resource_read", {{"found", false}});
    return std::nullopt;
  }
  auto& [entry, fd] = *found;
  // Read from the open file: an eviction meanwhile unlinks only its name.
  const int64_t begin = part == 1 ? 0 : PartEnd(fd.get(), part - 1, entry.size);
  const int64_t end = PartEnd(fd.get(), part, entry.size);
  std::string data;
  if (!ResourceStore::ReadRange(fd.get(), begin, end, &data)) return std::nullopt;
  const std::string mime = entry.mime.empty() ? MimeTypeForPath(entry.name) : entry.mime;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      entry.expires - ResourceStore::Clock::now());
  log::Info("resource_read", {{"found", true}, {"bytes", end - begin}, {"part", part}});
  Resource r{json::array({ResourceContentsItem(uri, mime, data)}),
             std::max<int64_t>(0, left.count()), json::object()};
  if (parts > 1) {
    r.meta = {{"mcp-exec/part", part}, {"mcp-exec/parts", parts}, {"mcp-exec/size", entry.size}};
    if (part < parts) r.meta["mcp-exec/next"] = ResourcePartUri(base, part + 1);
  }
  return r;
}

}  // namespace mcpexec
