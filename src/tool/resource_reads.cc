#include "tool/resource_reads.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>

#include "base/log.h"
#include "base/text.h"
#include "model/call_bounds.h"
#include "tool/contract.h"

namespace mcpexec {

using json = nlohmann::json;

namespace {

// Reads [begin, end) of an open file; false on a short read.
bool ReadRange(int fd, int64_t begin, int64_t end, std::string* out) {
  out->assign(static_cast<size_t>(end - begin), '\0');
  size_t got = 0;
  while (got < out->size()) {
    ssize_t n = pread(fd, out->data() + got, out->size() - got,
                      static_cast<off_t>(begin + static_cast<int64_t>(got)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// A task's result kept in the resource store (its TTL is the task's).
class StoreSpill : public TaskResultSpill {
 public:
  explicit StoreSpill(ResourceStore* store) : store_(store) {}
  std::optional<std::string> Save(const std::string& bytes) override {
    auto w = store_->Begin(static_cast<int64_t>(bytes.size()));
    if (!w || !w->Write(bytes.data(), bytes.size())) return std::nullopt;
    return store_->Commit(*w, "task-result.json", "application/json");
  }
  std::optional<std::string> Load(const std::string& key) override {
    auto opened = store_->Open(key);
    if (!opened) return std::nullopt;
    std::string out;
    if (!ReadRange(opened->second.get(), 0, opened->first.size, &out)) return std::nullopt;
    return out;
  }

 private:
  ResourceStore* store_;
};

}  // namespace

TaskOptions TaskOptionsFor(const Config& c) {
  TaskOptions o;
  o.after = std::chrono::seconds(c.task_after_s);
  o.max_tasks = c.max_tasks;
  // A task's result lasts as long as the resources its links name.
  o.keep = std::chrono::seconds(c.resource_ttl_s);
  // The longest a run goes once it started: its timeout, then the kill.
  o.run_bound = CallBound(c);
  return o;
}

std::shared_ptr<TaskResultSpill> TaskSpillTo(ResourceStore* store) {
  return store ? std::make_shared<StoreSpill>(store) : nullptr;
}

namespace {

// Where part k ends (k parts in): k x kResourcePartBytes, moved back to the
// start of a UTF-8 character (at most 3 bytes), so that a text resource's
// parts are text each; the last ends at the end.
int64_t PartEnd(int fd, int64_t k, int64_t size) {
  int64_t at = k * kResourcePartBytes;
  if (at >= size) return size;
  std::string probe;
  if (!ReadRange(fd, at - 3, at + 1, &probe)) return at;
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
std::optional<Resource> ExecResources::Read(const std::string& uri) {
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
  if (!ReadRange(fd.get(), begin, end, &data)) return std::nullopt;
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
