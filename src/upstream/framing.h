// What an upstream MCP server sends, taken apart with bounds: its messages
// on stdout (one JSON-RPC message a line), an HTTP/1.1 response (its head,
// a body plain or chunked), and a server-sent event stream. Nothing here
// trusts the upstream: every buffer is bounded (kMaxMessage for a message,
// 64 KiB for a head, 1 KiB for a chunk's size line), every byte is scanned
// once, and every message goes through bounded_json. The fuzz targets
// fuzz_upstream_framing and fuzz_upstream_http drive these directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace mcpexec::upstream {

// A message from an upstream may be large (a tool's whole result); past
// this the upstream is taken for broken. The run's own cap is smaller
// (MCP_EXEC_MAX_TOOL_RESULT_BYTES) and is applied after.
constexpr size_t kMaxMessage = size_t{64} << 20;

// A JSON-RPC response: an object with an id, a result or an error, and no
// method.
bool IsResponse(const nlohmann::json& m);

// One message, parsed with the nesting bound. A message too deep to read
// becomes a JSON-RPC error under its id (when its top level has one), so
// that the call waiting for it fails at once, saying why; anything else
// unreadable comes back discarded.
nlohmann::json ParseMessage(std::string_view text);

// Newline-delimited messages: bytes in any pieces, whole lines out.
class LineFramer {
 public:
  // Calls on_line with each whole line (without its newline). False once a
  // line passes kMaxMessage without its end (the stream is broken).
  bool Feed(const char* data, size_t n, const std::function<void(std::string_view)>& on_line);

 private:
  std::string buf_;
  size_t scanned_ = 0;  // bytes of buf_ known to hold no newline
};

// A server-sent event stream: bytes in, the data of each event out.
class EventStream {
 public:
  // Calls on_event with each event's data (its data: lines joined by
  // newlines). False once a line or an event passes kMaxMessage.
  bool Feed(const char* data, size_t n, const std::function<void(std::string_view)>& on_event);

 private:
  LineFramer lines_;
  std::string event_;
  bool too_big_ = false;
};

using Clock = std::chrono::steady_clock;

// An HTTP/1.1 response's status and headers (names in lower case).
struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;
};

// An HTTP/1.1 response read from fd by the deadline: the head, then the
// body decoded (chunked or by length, or to EOF) as it comes.
class BodyReader {
 public:
  BodyReader(int fd, Clock::time_point deadline) : fd_(fd), deadline_(deadline) {}
  bool Head(Response* r, std::string* error);
  // Appends the next decoded bytes to *out. False at the end (or error).
  bool Next(std::string* out, std::string* error);

 private:
  bool More(std::string* error);
  int fd_;
  Clock::time_point deadline_;
  std::string raw_;
  bool chunked_ = false, done_ = false, need_crlf_ = false;
  int64_t left_ = -1;
  size_t chunk_left_ = 0;
};

// An event stream's events until the response with this id; nullopt (and
// *error) when the stream ends without it or breaks a bound.
std::optional<nlohmann::json> ResponseEvent(BodyReader& reader, const nlohmann::json& id,
                                            std::string* error);

// The whole body of a plain (not event-stream) answer, at most kMaxMessage
// bytes; false when it was longer.
bool ReadBody(BodyReader& reader, std::string* body, std::string* error);

int MillisUntil(Clock::time_point deadline);

}  // namespace mcpexec::upstream
