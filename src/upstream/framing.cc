#include "upstream/framing.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/bounded_json.h"
#include "protocol/jsonrpc.h"

namespace mcpexec::upstream {

namespace {

// A chunk's size line ("1a2b;ext=1\r\n"): a few bytes in any real server.
constexpr size_t kMaxChunkLine = 1024;
constexpr size_t kMaxHead = 65536;

// Reads what is there (or waits for it by the deadline). 0: EOF.
ssize_t ReadSome(int fd, char* buf, size_t len, Clock::time_point deadline, std::string* error) {
  for (;;) {
    ssize_t n = read(fd, buf, len);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) {
      *error = std::string("read: ") + strerror(errno);
      return -1;
    }
    pollfd p{fd, POLLIN, 0};
    int ms = MillisUntil(deadline);
    if (ms == 0 || poll(&p, 1, ms) == 0) {
      *error = "it did not answer in time";
      return -1;
    }
  }
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

int MillisUntil(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

bool IsResponse(const nlohmann::json& m) {
  return m.is_object() && m.contains("id") && !m.contains("method") &&
         (m.contains("result") || m.contains("error"));
}

nlohmann::json ParseMessage(std::string_view text) {
  bounded_json::Parsed parsed = bounded_json::Parse(text);
  if (parsed.ok()) return std::move(parsed.value);
  if (!parsed.too_deep) return nlohmann::json(nlohmann::json::value_t::discarded);
  const nlohmann::json id = bounded_json::TopLevelId(text);
  if (id.is_null()) return nlohmann::json(nlohmann::json::value_t::discarded);
  return jsonrpc::Error(id, jsonrpc::kInternalError, "its answer is " + parsed.error);
}

bool LineFramer::Feed(const char* data, size_t n,
                      const std::function<void(std::string_view)>& on_line) {
  buf_.append(data, n);
  size_t start = 0;
  for (size_t nl; (nl = buf_.find('\n', std::max(start, scanned_))) != std::string::npos;
       start = nl + 1) {
    on_line(std::string_view(buf_).substr(start, nl - start));
    scanned_ = nl + 1;
  }
  buf_.erase(0, start);
  scanned_ = buf_.size();  // what is left holds no newline
  return buf_.size() <= kMaxMessage;
}

bool EventStream::Feed(const char* data, size_t n,
                       const std::function<void(std::string_view)>& on_event) {
  const bool lines_ok = lines_.Feed(data, n, [&](std::string_view line) {
    if (too_big_) return;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      if (!event_.empty()) on_event(event_);
      event_.clear();
      return;
    }
    if (line.substr(0, 5) != "data:") return;  // event:, id:, retry:, comments
    line.remove_prefix(5);
    if (!line.empty() && line[0] == ' ') line.remove_prefix(1);
    if (!event_.empty()) event_ += '\n';
    event_.append(line);
    if (event_.size() > kMaxMessage) too_big_ = true;
  });
  return lines_ok && !too_big_;
}

bool BodyReader::Head(Response* r, std::string* error) {
  size_t end;
  while ((end = raw_.find("\r\n\r\n")) == std::string::npos) {
    if (raw_.size() > kMaxHead || !More(error)) {
      if (error->empty()) {
        *error = raw_.size() > kMaxHead ? "its answer's head passed 64 KiB"
                                        : "it closed the connection before answering";
      }
      return false;
    }
  }
  std::string head = raw_.substr(0, end);
  raw_.erase(0, end + 4);
  size_t line_end = head.find("\r\n");
  std::string status_line = head.substr(0, line_end);
  if (status_line.size() < 12 || status_line.compare(0, 5, "HTTP/") != 0) {
    *error = "it did not answer HTTP";
    return false;
  }
  r->status = std::atoi(status_line.c_str() + 9);
  size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string::npos) e = head.size();
    std::string line = head.substr(pos, e - pos);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      r->headers[Lower(line.substr(0, colon))] = v;
    }
    pos = e + 2;
  }
  chunked_ = Lower(r->headers["transfer-encoding"]).find("chunked") != std::string::npos;
  if (r->headers.count("content-length")) {
    const long long length = std::strtoll(r->headers["content-length"].c_str(), nullptr, 10);
    left_ = length < 0 ? 0 : length;
  }
  return true;
}

bool BodyReader::Next(std::string* out, std::string* error) {
  if (done_) return false;
  if (!chunked_) {
    if (raw_.empty() && (left_ == 0 || !More(error))) {
      done_ = true;
      return false;
    }
    size_t take =
        left_ >= 0 ? std::min<size_t>(raw_.size(), static_cast<size_t>(left_)) : raw_.size();
    out->append(raw_, 0, take);
    raw_.erase(0, take);
    if (left_ >= 0) left_ -= static_cast<int64_t>(take);
    if (left_ == 0) done_ = true;
    return true;
  }
  for (;;) {
    if (chunk_left_ > 0) {
      if (raw_.empty() && !More(error)) return false;
      size_t take = std::min<size_t>(raw_.size(), chunk_left_);
      out->append(raw_, 0, take);
      raw_.erase(0, take);
      chunk_left_ -= take;
      if (chunk_left_ == 0) need_crlf_ = true;
      return true;
    }
    if (need_crlf_) {
      while (raw_.size() < 2) {
        if (!More(error)) return false;
      }
      raw_.erase(0, 2);
      need_crlf_ = false;
    }
    size_t e;
    while ((e = raw_.find("\r\n")) == std::string::npos) {
      if (raw_.size() > kMaxChunkLine) {
        *error = "it sent a chunk size line of more than 1 KiB";
        done_ = true;
        return false;
      }
      if (!More(error)) return false;
    }
    if (e > kMaxChunkLine) {
      *error = "it sent a chunk size line of more than 1 KiB";
      done_ = true;
      return false;
    }
    chunk_left_ = std::strtoull(raw_.substr(0, e).c_str(), nullptr, 16);
    raw_.erase(0, e + 2);
    if (chunk_left_ == 0) {
      done_ = true;
      return false;
    }
  }
}

bool BodyReader::More(std::string* error) {
  char buf[65536];
  ssize_t n = ReadSome(fd_, buf, sizeof buf, deadline_, error);
  if (n <= 0) return false;
  raw_.append(buf, static_cast<size_t>(n));
  return true;
}

std::optional<nlohmann::json> ResponseEvent(BodyReader& reader, const nlohmann::json& id,
                                            std::string* error) {
  EventStream events;
  std::optional<nlohmann::json> found;
  std::string piece;
  while (!found && reader.Next(&piece, error)) {
    const bool ok = events.Feed(piece.data(), piece.size(), [&](std::string_view data) {
      if (found) return;
      nlohmann::json m = ParseMessage(data);
      if (IsResponse(m) && m["id"] == id) found = std::move(m);
    });
    piece.clear();
    if (!ok && !found) {
      *error = "it sent a message of more than 64 MiB";
      return std::nullopt;
    }
  }
  if (found) return found;
  if (error->empty()) *error = "its event stream ended without the answer";
  return std::nullopt;
}

bool ReadBody(BodyReader& reader, std::string* body, std::string* error) {
  while (reader.Next(body, error)) {
    if (body->size() > kMaxMessage) {
      *error = "it sent a message of more than 64 MiB";
      return false;
    }
  }
  return true;
}

}  // namespace mcpexec::upstream
