#include "supervisor/results.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "base/fs_util.h"
#include "process/wire.h"

namespace mcpexec {

using json = nlohmann::json;

namespace {

constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kMaxOmittedListed = 100;
constexpr char kPngMagic[] = "\x89PNG\r\n\x1a\n";

// Header fields as the run wrote them: of the wrong type, the default
// (nlohmann's value() would throw).
int64_t IntOf(const json& h, const char* key, int64_t dflt) {
  auto it = h.find(key);
  return it != h.end() && it->is_number_integer() ? it->get<int64_t>() : dflt;
}
std::string StrOf(const json& h, const char* key) {
  auto it = h.find(key);
  return it != h.end() && it->is_string() ? it->get<std::string>() : std::string();
}
bool BoolOf(const json& h, const char* key) {
  auto it = h.find(key);
  return it != h.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

ResultLimits ResultLimitsFor(const Config& c) {
  return {c.max_images, c.max_image_bytes, c.max_out_files, c.max_out_bytes, c.max_result_bytes};
}

bool ResultsReader::Read(int fd) {
  char chunk[65536];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) {
      const auto cap = static_cast<size_t>(limits_.KeepBytes());
      size_t keep = std::min(cap - std::min(buf_.size(), cap), static_cast<size_t>(n));
      buf_.append(chunk, keep);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

bool IsOutFilePath(const std::string& path) {
  return path.rfind("out/", 0) == 0 && !RelativePathProblem(path);
}

void ResultsReader::Take(const std::string& kind, const json& header, std::string payload,
                         RunOutcome* out, int64_t* out_bytes) const {
  const auto size = static_cast<int64_t>(payload.size());
  if (kind == "image") {
    bool png = StrOf(header, "mimeType") == "image/png" && payload.size() >= 8 &&
               payload.compare(0, 8, kPngMagic, 8) == 0;
    if (!png || size > limits_.max_image_bytes ||
        static_cast<int64_t>(out->images.size()) >= limits_.max_images) {
      ++out->images_omitted;
      return;
    }
    out->images.push_back({"", "image/png", std::move(payload)});
  } else if (kind == "file") {
    std::string path = StrOf(header, "path");
    if (!IsOutFilePath(path)) return;
    const char* why = static_cast<int64_t>(out->files.size()) >= limits_.max_out_files ? "count"
                      : *out_bytes + size > limits_.max_out_bytes                      ? "bytes"
                                                                                       : nullptr;
    if (why) {
      ++out->files_omitted_count;
      if (out->files_omitted.size() < kMaxOmittedListed)
        out->files_omitted.push_back({path, size, why});
      return;
    }
    *out_bytes += size;
    out->files.push_back({path, "", std::move(payload)});
  } else if (kind == "result" && !out->has_result) {
    out->has_result = true;
    out->result_truncated = BoolOf(header, "truncated") || size > limits_.max_result_bytes;
    payload.resize(std::min(payload.size(), static_cast<size_t>(limits_.max_result_bytes)));
    out->result = std::move(payload);
  } else if (kind == "images_omitted") {
    out->images_omitted += std::clamp<int64_t>(IntOf(header, "count", 0), 0, 1000000);
  } else if (kind == "files_omitted") {
    out->files_omitted_count += std::clamp<int64_t>(IntOf(header, "count", 0), 0, 1000000);
    auto files = header.find("files");
    if (files == header.end() || !files->is_array()) return;
    for (const json& f : *files) {
      if (!f.is_object() || out->files_omitted.size() >= kMaxOmittedListed) continue;
      std::string path = StrOf(f, "path"), why = StrOf(f, "why");
      if (!IsOutFilePath(path) || (why != "count" && why != "bytes")) continue;
      out->files_omitted.push_back({path, std::max<int64_t>(0, IntOf(f, "bytes", 0)), why});
    }
  }
}

void ResultsReader::Finish(RunOutcome* out) const {
  size_t pos = 0;
  int64_t out_bytes = 0;
  while (buf_.size() - pos >= 4) {
    const uint32_t hlen = wire::LoadU32LE(buf_.data() + pos);
    if (hlen > kMaxHeaderBytes || buf_.size() - pos - 4 < hlen) break;
    json header =
        json::parse(buf_.begin() + static_cast<std::ptrdiff_t>(pos + 4),
                    buf_.begin() + static_cast<std::ptrdiff_t>(pos + 4 + hlen), nullptr, false);
    if (!header.is_object()) break;
    const int64_t bytes = IntOf(header, "bytes", -1);
    if (bytes < 0 || static_cast<uint64_t>(bytes) > buf_.size() - pos - 4 - hlen) break;
    std::string payload = buf_.substr(pos + 4 + hlen, static_cast<size_t>(bytes));
    pos += 4 + hlen + static_cast<size_t>(bytes);
    Take(StrOf(header, "kind"), header, std::move(payload), out, &out_bytes);
  }
}

}  // namespace mcpexec
