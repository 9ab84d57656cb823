// How JSON-RPC messages reach one upstream server: the interface the
// client speaks through, whichever transport carries it (client.h's
// StdioLink, http_link.h's HttpLink).
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mcpexec::upstream {

using Clock = std::chrono::steady_clock;

class Link {
 public:
  virtual ~Link() = default;
  // Sends a request and waits for the response with its id, until the
  // deadline. nullopt: *error says why (the message, never a secret).
  virtual std::optional<nlohmann::json> Request(const nlohmann::json& request,
                                                Clock::time_point deadline, std::string* error) = 0;
  virtual void Notify(const nlohmann::json& notification) = 0;
  // False once the server is gone (a stdio child that exited, an HTTP
  // server that forgot the session).
  virtual bool Alive() const = 0;
  // The server is shutting down: calls in flight end now.
  virtual void Abort() {}

  // Called (from the link's reading thread) when the server says its tool
  // list changed (notifications/tools/list_changed); set before the first
  // message is sent.
  std::function<void()> on_tools_changed;
};

// Whether a message is the server's word that its tool list changed.
inline bool IsToolsChanged(const nlohmann::json& m) {
  return m.is_object() && !m.contains("id") && m.contains("method") && m["method"].is_string() &&
         m["method"].get_ref<const std::string&>() == "notifications/tools/list_changed";
}

}  // namespace mcpexec::upstream
