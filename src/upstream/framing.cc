#include "upstream/framing.h"

#include <algorithm>
#include <cstdint>

#include "base/bounded_json.h"
#include "protocol/jsonrpc.h"

namespace mcpexec::upstream {

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

}  // namespace mcpexec::upstream
