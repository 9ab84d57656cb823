#include "supervisor/results.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "base/bounded_json.h"
#include "base/fs_util.h"
#include "base/utf8.h"
#include "ipc/result_records.h"
#include "supervisor/tool_channel.h"

namespace mcpexec {

using json = nlohmann::json;

namespace {

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

// The width and height in a PNG's IHDR chunk (the first, by the format), or
// false when the bytes are not a PNG.
bool PngSize(const std::string& data, uint32_t* width, uint32_t* height) {
  if (data.size() < 24 || data.compare(0, 8, kPngMagic, 8) != 0 ||
      data.compare(12, 4, "IHDR") != 0) {
    return false;
  }
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(data[at + i]);
    return v;
  };
  *width = be32(16);
  *height = be32(20);
  return true;
}

}  // namespace

bool IsOmittedWhy(const std::string& why) {
  for (const char* w : kOmittedWhy) {
    if (why == w) return true;
  }
  return false;
}

ResultLimits ResultLimitsFor(const Config& c) {
  ResultLimits l{c.max_images,    c.max_image_bytes,  c.max_out_files,
                 c.max_out_bytes, c.max_result_bytes, c.max_image_side};
  // A linked file is written into the run's disk first, and into the store.
  l.max_link_bytes = std::min(c.disk_limit_mb, c.resource_store_mb) << 20;
  if (!c.upstreams.empty()) {
    l.max_tool_frame_bytes =
        ToolChannel::MaxRequestBytes({c.max_tool_calls, c.max_tool_result_bytes});
    l.max_tool_calls_in_flight = c.max_tool_calls_in_flight;
  }
  return l;
}

bool ResultsReader::Read(int fd) {
  char chunk[65536];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n > 0) {
      Consume(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

// A record (ipc/result_records.h): its prefix (the header's and the
// payload's lengths), the JSON header, the payload. The prefix alone says
// where the next record starts, so a header that does not parse costs only
// its own record.
void ResultsReader::Consume(const char* data, size_t n) {
  while (n > 0) {
    if (part_ == Part::kFrame) {
      const size_t take = std::min(n, ipc::kRecordPrefixBytes - frame_.size());
      frame_.append(data, take);
      data += take;
      n -= take;
      if (frame_.size() < ipc::kRecordPrefixBytes) return;
      const ipc::RecordPrefix prefix = ipc::LoadRecordPrefix(frame_.data());
      head_len_ = prefix.head_bytes;
      body_len_ = prefix.body_bytes;
      head_.clear();
      body_seen_ = 0;
      part_ = Part::kHeader;
      if (head_len_ == 0) StartBody();
      continue;
    }
    if (part_ == Part::kHeader) {
      // A header past its bound is skipped (its bytes counted, not kept).
      const size_t want = static_cast<size_t>(head_len_) - body_seen_;
      const size_t take = std::min(n, want);
      if (head_len_ <= ipc::kMaxRecordHeadBytes) head_.append(data, take);
      body_seen_ += take;
      data += take;
      n -= take;
      if (body_seen_ == head_len_) StartBody();
      continue;
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, body_len_ - body_seen_));
    if (body_ == Body::kKeep) buf_.append(data, take);
    if (body_ == Body::kLink && link_) link_->Write(data, take);
    body_seen_ += take;
    data += take;
    n -= take;
    if (body_seen_ == body_len_) EndBody();
  }
}

void ResultsReader::StartBody() {
  part_ = Part::kBody;
  body_seen_ = 0;
  body_ = Body::kDrop;
  json header = head_len_ <= ipc::kMaxRecordHeadBytes ? bounded_json::Parse(head_).value : json();
  if (header.is_object() && StrOf(header, "kind") == "file" && BoolOf(header, "link")) {
    // An out/ file too big to embed: into the store as it comes, if there
    // is room for it among the run's links.
    const std::string path = StrOf(header, "path");
    if (IsOutFilePath(path) && EscapeName(path) == path) {
      const auto size = static_cast<int64_t>(body_len_);
      if (size <= link_room_) link_ = store_->Begin(size);
      if (link_) {
        link_room_ -= size;
        link_header_ = std::move(header);
        body_ = Body::kLink;
      } else {
        link_omitted_.push_back({path, size, "bytes"});
      }
    }
  } else if (head_len_ <= ipc::kMaxRecordHeadBytes &&
             buf_.size() + 8 + head_len_ + body_len_ <=
                 static_cast<uint64_t>(limits_.KeepBytes())) {
    // Kept whole or not at all: a record cut at the bound is never parsed.
    buf_ += frame_;
    buf_ += head_;
    body_ = Body::kKeep;
  }
  if (body_len_ == 0) EndBody();
}

void ResultsReader::EndBody() {
  if (body_ == Body::kLink) {
    const std::string path = StrOf(link_header_, "path");
    const auto size = static_cast<int64_t>(body_len_);
    if (auto uri = store_->Commit(*link_, path, "")) {
      linked_.push_back({path, *uri, size});
    } else {
      link_omitted_.push_back({path, size, "bytes"});  // past the store's bound
    }
    link_.reset();
  }
  part_ = Part::kFrame;
  frame_.clear();
}

bool IsOutFilePath(const std::string& path) {
  return path.rfind("out/", 0) == 0 && !RelativePathProblem(path);
}

void ResultsReader::Take(const std::string& kind, const json& header, std::string payload,
                         RunOutcome* out, int64_t* out_bytes) const {
  const auto size = static_cast<int64_t>(payload.size());
  if (kind == "image") {
    // The bytes decide, not the label: a PNG whose header says it fits
    // (the runtime scales every image to max_image_side; past it, clients
    // refuse the image and a decoder would hold width x height pixels).
    uint32_t width = 0, height = 0;
    const auto side = static_cast<uint32_t>(limits_.max_image_side);
    bool png = StrOf(header, "mimeType") == "image/png" && PngSize(payload, &width, &height) &&
               width >= 1 && height >= 1 && width <= side && height <= side;
    if (!png || size > limits_.max_image_bytes ||
        static_cast<int64_t>(out->images.size()) >= limits_.max_images) {
      ++out->images_omitted;
      return;
    }
    out->images.push_back({"", "image/png", std::move(payload), "", 0});
  } else if (kind == "file") {
    std::string path = StrOf(header, "path");
    if (!IsOutFilePath(path)) return;
    // A name that would show as something else (not UTF-8, control or bidi
    // characters) comes back listed, escaped, never as a resource.
    const bool odd_name = EscapeName(path) != path;
    const char* why = odd_name                                                           ? "name"
                      : static_cast<int64_t>(out->files.size()) >= limits_.max_out_files ? "count"
                      : *out_bytes + size > limits_.max_out_bytes                        ? "bytes"
                                                                                         : nullptr;
    if (why) {
      ++out->files_omitted_count;
      if (out->files_omitted.size() < kMaxOmittedListed)
        out->files_omitted.push_back({EscapeName(path), size, why});
      return;
    }
    *out_bytes += size;
    out->files.push_back({path, "", std::move(payload), "", 0});
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
      if (!IsOutFilePath(path) || !IsOmittedWhy(why)) continue;
      out->files_omitted.push_back(
          {EscapeName(path), std::max<int64_t>(0, IntOf(f, "bytes", 0)), why});
    }
  }
}

void ResultsReader::Finish(RunOutcome* out) {
  size_t pos = 0;
  int64_t out_bytes = 0;
  while (buf_.size() - pos >= ipc::kRecordPrefixBytes) {
    const ipc::RecordPrefix prefix = ipc::LoadRecordPrefix(buf_.data() + pos);
    const uint64_t hlen = prefix.head_bytes, blen = prefix.body_bytes;
    if (buf_.size() - pos - ipc::kRecordPrefixBytes < hlen + blen) break;
    const size_t head_at = pos + ipc::kRecordPrefixBytes, body_at = head_at + hlen;
    pos = body_at + blen;
    json header = bounded_json::Parse(std::string_view(buf_).substr(head_at, hlen)).value;
    if (!header.is_object()) continue;
    Take(StrOf(header, "kind"), header, buf_.substr(body_at, blen), out, &out_bytes);
  }
  // Linked files count among the run's files, after the embedded ones.
  for (Linked& l : linked_) {
    if (static_cast<int64_t>(out->files.size()) >= limits_.max_out_files) {
      ++out->files_omitted_count;
      if (out->files_omitted.size() < kMaxOmittedListed)
        out->files_omitted.push_back({l.path, l.bytes, "count"});
      continue;
    }
    out->files.push_back({l.path, "", "", std::move(l.uri), l.bytes});
  }
  for (OmittedFile& f : link_omitted_) {
    ++out->files_omitted_count;
    if (out->files_omitted.size() < kMaxOmittedListed) out->files_omitted.push_back(std::move(f));
  }
  linked_.clear();
  link_omitted_.clear();
}

}  // namespace mcpexec
