// One MCP client per upstream: JSON-RPC over a stdio child (StdioLink,
// here) or streamable HTTP (http_link.h), in either protocol era
// (initialize first; a server that refuses it and answers server/discover
// is spoken to statelessly, with the 2026-07-28 _meta on every request).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "base/unique_fd.h"
#include "protocol/eras.h"
#include "upstream/config.h"
#include "upstream/link.h"

namespace mcpexec::upstream {

// A stdio server: a child process whose stdin and stdout carry one JSON
// message per line. Its stderr is kept (the last 4 KiB) for a start error.
class StdioLink : public Link {
 public:
  explicit StdioLink(const Spec& spec);
  ~StdioLink() override;
  bool Start(std::string* error);
  std::optional<nlohmann::json> Request(const nlohmann::json& request, Clock::time_point deadline,
                                        std::string* error) override;
  void Notify(const nlohmann::json& notification) override;
  bool Alive() const override;
  void Abort() override;  // kills the child: its calls in flight fail at once
  // What the child wrote on stderr last, with the entry's secrets masked.
  std::string StderrTail() const;

 private:
  bool Write(const std::string& line, Clock::time_point deadline, std::string* error);
  void ReadLoop();
  void Answer(const nlohmann::json& request);

  const Spec spec_;
  pid_t pid_ = -1;
  UniqueFd in_, out_, err_, stop_;
  std::thread reader_;
  mutable std::mutex mu_;
  std::mutex write_mu_;
  std::condition_variable cv_;
  std::map<int64_t, std::optional<nlohmann::json>> waiting_;
  bool dead_ = false;
  std::string exit_text_;
  std::string stderr_tail_;
};

// text with every secret in it written as "***" (one pass a secret).
std::string Mask(const std::string& text, const std::vector<std::string>& secrets);
// The same for every string of a value (keys left as they are).
void MaskStrings(nlohmann::json* value, const std::vector<std::string>& secrets);

// What a tools/call answered.
struct CallResult {
  bool ok = false;                  // the call reached the server and it answered
  nlohmann::json result = nullptr;  // ok: the CallToolResult
  std::string error;                // !ok: why (transport or JSON-RPC error)
  int64_t bytes = 0;                // the result's size as JSON
};

class Client {
 public:
  explicit Client(Spec spec);
  ~Client();
  // Starts (a stdio child) or connects, does the handshake and lists the
  // tools. On error, *error names what failed.
  bool Start(Clock::time_point deadline, std::string* error);
  nlohmann::json tools() const;  // as listed (every tool)
  // Whether the server said its tool list changed since it was listed.
  bool ToolsChanged() const { return tools_changed_.load(); }
  // Lists the tools again (after ToolsChanged); false, with *error, when
  // that failed (the old list stays).
  bool Relist(Clock::time_point deadline, std::string* error);
  const Spec& spec() const { return spec_; }
  CallResult Call(const std::string& tool, const nlohmann::json& arguments,
                  Clock::time_point deadline);
  std::string era() const { return stateless_ ? eras::kStatelessVersion : legacy_version_; }
  // Shutdown: calls in flight end now, and no restart follows.
  void Abort();

 private:
  std::shared_ptr<Link> Live(Clock::time_point deadline, std::string* error);
  bool Connect(std::shared_ptr<Link>* out, Clock::time_point deadline, std::string* error);
  std::optional<nlohmann::json> Rpc(Link& link, const std::string& method, nlohmann::json params,
                                    Clock::time_point deadline, std::string* error);
  // Every page of tools/list.
  std::optional<nlohmann::json> List(Link& link, Clock::time_point deadline, std::string* error);

  const Spec spec_;
  mutable std::mutex mu_;
  std::atomic<bool> tools_changed_{false};
  std::shared_ptr<Link> link_;
  int64_t next_id_ = 1;
  bool stateless_ = false;
  std::string legacy_version_;
  nlohmann::json tools_ = nlohmann::json::array();
  int restarts_ = 0;
  bool aborted_ = false;
  Clock::time_point last_restart_{};
};

}  // namespace mcpexec::upstream
