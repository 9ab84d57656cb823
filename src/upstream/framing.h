// What an upstream MCP server sends, taken apart with bounds: its messages
// on stdout (one JSON-RPC message a line) and a server-sent event stream
// (an HTTP answer's body; Beast reads the HTTP around it, http_link.h).
// Nothing here trusts the upstream: every buffer is bounded (kMaxMessage
// for a message), every byte is scanned once, and every message goes
// through bounded_json. The fuzz target fuzz_upstream_framing drives these
// directly, fuzz_upstream_http through an HTTP answer.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/deadline.h"

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

}  // namespace mcpexec::upstream
