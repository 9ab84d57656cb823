// MCP over JSON-RPC 2.0, independent of the transport: a session takes
// messages in and hands responses to a sender (possibly later and from
// another thread: a tools/call runs on the server's call pool).
//
// One dispatch for both eras: a message is classified once (its JSON-RPC
// envelope, jsonrpc::Classify; its era, eras::Classify), at the transport's
// entry or in Handle for a transport that does no checks of its own
// (stdio), and then routed by a method-to-handler table of its era.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/call_pool.h"
#include "base/cancel.h"
#include "base/unique_fd.h"
#include "protocol/eras.h"
#include "protocol/jsonrpc.h"
#include "protocol/server.h"
#include "protocol/tasks.h"

namespace mcpexec {

// Where a tools/call came from: its connection (one per McpSession, never
// reused: for state a tool keeps per connection), whether it is of protocol
// 2026-07-28 (no connection state may be relied on), and the client's name
// as it gave it (initialize's or the request's clientInfo; may be empty).
struct CallContext {
  uint64_t connection = 0;
  bool stateless = false;
  std::string client;  // clientInfo's name ("" when it gave none)
  // Who sent it, as the transport sees it: "stdio", or the peer's address
  // over HTTP. With the client's name it is the key of fair shares: a
  // client that makes a connection per call is still one client.
  std::string peer;
};

// The tool as every session sees it. The session knows JSON-RPC and MCP;
// what a tool's arguments mean is the backend's business. What the
// sessions share besides (tasks, resources) is the Server's
// (protocol/server.h).
class ToolBackend {
 public:
  virtual ~ToolBackend() = default;
  virtual nlohmann::json ToolDescriptor() const = 0;
  // The name tools/call must give (ToolDescriptor()'s "name", without
  // building the whole descriptor on every call).
  virtual std::string ToolName() const = 0;
  // initialize's instructions (how to use the tool); empty: none.
  virtual std::string Instructions() const { return std::string(); }
  // Who may share cached lists and discover results (protocol 2026-07-28,
  // cacheScope): "public", or "private" when answers depend on a credential.
  virtual std::string CacheScope() const { return "public"; }
  // Reports a running call's progress (MCP notifications/progress): an
  // increasing number and a short message. Empty when the call asked for
  // none (no _meta.progressToken).
  using Progress = std::function<void(double progress, const std::string& message)>;
  // The work of one admitted call, run on the call's own thread; returns
  // its CallToolResult.
  using Work = std::function<nlohmann::json(CancelToken& cancel, const Progress& progress)>;
  // Checks a call's arguments and reserves room for it. Returns the work, or
  // the CallToolResult to answer at once (a tool error: bad arguments, at
  // capacity).
  virtual std::variant<Work, nlohmann::json> Accept(const nlohmann::json& arguments,
                                                    const CallContext& context) = 0;
  // The connection is gone (stdio EOF, HTTP session deleted or expired, SSE
  // stream closed), after its calls have ended.
  virtual void ConnectionEnded(uint64_t /*connection*/) {}
  // A termination signal: the server is going down, so connections that end
  // from now on end because of it (not because their client left).
  virtual void ServerStopping() {}
};

// A CallToolResult with isError true: the one text item is `message`.
nlohmann::json ToolErrorResult(const std::string& message);

// A request's _meta.progressToken when it is one MCP allows (a string or an
// integer); nullopt otherwise: the request gets no progress notifications
// (and over HTTP, a call without them is answered as JSON).
std::optional<nlohmann::json> ProgressTokenOf(const nlohmann::json& params);

// The longest string progressToken a call may carry (it is repeated in
// every progress notification): longer ones are refused (-32602).
constexpr size_t kMaxProgressTokenBytes = 1024;

// How long a client may keep discover's and the lists' results (ttlMs).
constexpr int64_t kCacheTtlMs = 300000;

// A request as the handlers see it: checked, of one era.
struct Request {
  jsonrpc::RequestId id;
  std::string method;
  nlohmann::json params;  // an object
  Era era = Era::kLegacy;
  bool stateless() const { return era == Era::kStateless; }
};

class McpSession {
 public:
  using Sender = std::function<void(const nlohmann::json&)>;
  struct Options {
    // Requests of protocol 2026-07-28 (their _meta names the version) are
    // served without a handshake. Off for a session an HTTP initialize made:
    // the transport routes the stateless era elsewhere.
    bool stateless = true;
    // Who the transport says sent the messages (CallContext::peer).
    std::string peer = "stdio";
    // The server's threads for calls (made in main; a task's run outlives
    // its session, so they are not the session's). nullptr: a pool for the
    // whole process, never joined (unit tests, the fuzz targets).
    CallPool* pool = nullptr;
  };
  McpSession(Server& server, Sender send, Options options);
  // A session with a server of its own, without tasks or resources (unit
  // tests, the fuzz targets).
  McpSession(ToolBackend& backend, Sender send) : McpSession(backend, std::move(send), Options{}) {}
  McpSession(ToolBackend& backend, Sender send, Options options);
  // A transport that can deliver a message on the stream of the request it
  // belongs to (streamable HTTP) sets this; it returns false when it cannot,
  // and the message then goes to the Sender.
  using RelatedSender =
      std::function<bool(const nlohmann::json& msg, const jsonrpc::RequestId& request_id)>;
  void SetRelatedSender(RelatedSender related) { related_ = std::move(related); }
  ~McpSession();

  // A raw message: -32700 if it is not JSON.
  void HandleText(const std::string& text);
  // A message no transport has checked: classified, a request of the
  // stateless era checked (envelope, version, method), then delivered.
  void Handle(const nlohmann::json& msg);
  // A message the transport classified and, for a request of the stateless
  // era, checked (with its headers: transport/http_stateless.h).
  // Taken by value: a request's params move on into its handler, the one
  // copy of a call's arguments on the way in being Classify's.
  void Deliver(jsonrpc::Inbound in, Era era);
  // The client's cancellation of a request (notifications/cancelled, or a
  // transport that saw its client leave): its call ends unanswered, a
  // listen ends.
  void Cancel(const jsonrpc::RequestId& id);

  // The methods the era's table routes (the tests hold the stateless one
  // to eras::kStatelessMethods).
  static std::vector<std::string> MethodsOf(Era era);

  // Ends every run of this session (queued ones never start) and, with
  // WaitIdle, waits for their threads. kClient: the calls get no answer (MCP
  // cancellation); kShutdown: each call is answered, with its output so far
  // and reason "shutdown", or a tool error if it had not started.
  void CancelAll(CancelReason why = CancelReason::kClient);
  bool WaitIdle(std::chrono::milliseconds timeout);
  // An eventfd that becomes readable each time the session's last call in
  // flight ends (made on first use), for a wait that polls other fds too.
  int IdleFd();
  // Ends every open subscriptions/listen with its closing result (the
  // server is going away).
  void EndListens();
  int64_t in_flight() const;

  bool initialized() const { return initialized_.load(); }
  uint64_t connection() const { return connection_; }
  std::string protocol_version() const;

 private:
  using Handler = void (McpSession::*)(const Request&);
  struct Route {
    Handler handler;
    bool before_initialize;  // 2025 era: served before the handshake
  };
  using Table = std::map<std::string, Route, std::less<>>;
  static const Table& TableOf(Era era);
  void Dispatch(const Request& req);

  // The handlers (of both eras unless named for one).
  void Initialize(const Request& req);  // 2025
  void Ping(const Request& req);        // 2025
  void Discover(const Request& req);    // 2026-07-28
  void ListTools(const Request& req);
  void ListResources(const Request& req);
  void ListResourceTemplates(const Request& req);
  void ListPrompts(const Request& req);  // 2026-07-28
  void GetPrompt(const Request& req);    // 2026-07-28
  void ReadResource(const Request& req);
  void Listen(const Request& req);  // 2026-07-28
  void CallTool(const Request& req);
  // tasks/get, tasks/cancel, tasks/update.
  void TaskRequest(const Request& req);

  // A list's result: in the stateless era with its caching hints.
  void AnswerList(const Request& req, nlohmann::json result);
  // A call from a client that declared tasks: its work runs on a thread of
  // its own, and the call's thread answers it, or hands it to the task store
  // once it has run for TaskOptions::after.
  void StartTaskableCall(const jsonrpc::RequestId& id, const std::shared_ptr<CancelToken>& token,
                         const ToolBackend::Progress& progress, bool stateless_era,
                         ToolBackend::Work work);
  // Whether the request declares io.modelcontextprotocol/tasks (its _meta
  // clientCapabilities.extensions), in either era.
  static bool DeclaresTasks(const nlohmann::json& params);
  // The advertised capabilities.extensions (the tasks extension when the
  // server keeps tasks).
  nlohmann::json Extensions() const;
  // The call's answer, unless the client cancelled it (MCP cancellation:
  // no answer); then it leaves calls_ and in_flight_.
  void AnswerCall(const jsonrpc::RequestId& id, const std::shared_ptr<CancelToken>& token,
                  const nlohmann::json& result);
  void ForgetCallLocked(const jsonrpc::RequestId& id, const std::shared_ptr<CancelToken>& token);

  ToolBackend::Progress MakeProgress(const Request& req, const std::shared_ptr<CancelToken>& token);

  // A call's answer when no thread could be made for its work.
  static nlohmann::json NoThreadResult(bool stateless_era);

  std::unique_ptr<Server> own_server_;  // only for a session made without one
  Server& server_;
  ToolBackend& backend_;  // server_.tool()
  const Options options_;
  CallPool& pool_;
  const uint64_t connection_;
  Sender send_;
  RelatedSender related_;
  std::atomic<bool> initialized_{false};
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::string protocol_version_;
  std::string client_;  // initialize's clientInfo.name
  // A client may (wrongly) reuse the id of a call in flight: every call
  // stays reachable for cancellation.
  std::multimap<jsonrpc::RequestId, std::shared_ptr<CancelToken>> calls_;
  int64_t in_flight_ = 0;
  UniqueFd idle_fd_;  // IdleFd's, once asked for (under mu_)
  // A call left in_flight_: wakes WaitIdle, IdleFd and the server's
  // changes.
  void CallEndedLocked();
  // Open subscriptions/listen requests: acknowledged, never notified (this
  // server's lists do not change), answered at the end.
  std::set<jsonrpc::RequestId> listens_;
};

}  // namespace mcpexec
