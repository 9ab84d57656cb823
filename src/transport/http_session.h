// The MCP-over-HTTP session: one MCP session (protocol/mcp_session.h) with
// the ways its messages leave over HTTP (the POST that waits for an answer,
// the session's event streams), and the table of open sessions with its
// fair share per client. Internal to the HTTP transport
// (transport/http_transport.h) and its fuzz target.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "protocol/mcp_session.h"
#include "transport/http_server.h"

namespace mcpexec {

// A message as one server-sent event, never a strict dump: it may quote a
// client's bytes, which need not be UTF-8.
std::string SseEvent(const nlohmann::json& msg);
std::string LenientDump(const nlohmann::json& msg);

// A POST waiting for the answer to its request. The answer may come before
// the POST decided how to answer (then it is answered as JSON at once), or
// after: as JSON when the POST awaits it (a call that sends nothing before
// its result), else as the stream's one event.
struct Waiter {
  explicit Waiter(jsonrpc::RequestId request_id) : id(std::move(request_id)) {}
  const jsonrpc::RequestId id;
  std::mutex mu;
  std::optional<nlohmann::json> answer;  // arrived before a stream was attached
  std::shared_ptr<http::Stream> stream;  // attached once the POST streams
  // Or the POST's exchange, when it awaits the answer as JSON; with the
  // headers the answer carries, and what the transport does once answered
  // (or once the client left: then the answer goes nowhere).
  std::shared_ptr<http::Exchange> exchange;
  http::Headers headers;
  std::function<void()> on_done;
  // Messages for the request's stream sent before it was attached (a
  // listen's acknowledgement is sent while the request is handled): written
  // first when it is. Progress is never kept (stale by then).
  std::vector<std::string> early;
  static constexpr size_t kMaxEarly = 16;
  bool answered = false;     // written to the stream
  bool stream_gone = false;  // the stream closed (its on_close ran)
  std::chrono::steady_clock::time_point give_up;

  // With mu held: the answer goes out on the attached stream, which ends,
  // or as the awaiting exchange's JSON.
  void DeliverLocked(const nlohmann::json& m);
  // With mu held: whether the POST has decided how to answer.
  bool AttachedLocked() const { return stream != nullptr || exchange != nullptr; }
};

// One MCP session. Answers to requests go to the POST that waits for them;
// everything else goes to the session's event streams (for the legacy
// transport: every message).
class HttpSession {
 public:
  using Clock = std::chrono::steady_clock;
  // stateless: the session of one POST of protocol 2026-07-28
  // (transport/http_stateless.h); else one an initialize opened, of 2025.
  // peer: the address that opened it (CallContext::peer of its calls).
  // pool: the server's threads for calls (McpSession::Options::pool).
  HttpSession(Server& server, bool legacy, bool stateless = false, const std::string& peer = "",
              CallPool* pool = nullptr);

  bool legacy() const { return legacy_; }

  std::shared_ptr<Waiter> Expect(const jsonrpc::RequestId& id);
  // Only this waiter: a client may reuse an id once answered, and this may
  // run after it did (a stream's on_close runs when the bytes are gone).
  void Forget(const jsonrpc::RequestId& id, const std::shared_ptr<Waiter>& w);
  // Legacy transport: a request whose answer will travel on the stream.
  void ExpectOnStream(const jsonrpc::RequestId& id);
  void NotExpected(const jsonrpc::RequestId& id);

  // An event stream of this session (GET /mcp, or the legacy stream): what
  // waited for one is written to it first.
  void Attach(std::shared_ptr<http::Stream> s);
  void Detached();
  void EndStreams();

  // Ends the session: its streams end, its calls are cancelled (no answer,
  // as for a client's cancellation).
  void Close();
  bool closed();

  // Nothing owed to a client: no POST waits for an answer, no legacy
  // request is unanswered, and everything written reached the sockets.
  bool Quiet();

  // Answers with an error what is still owed: POSTs past their give-up time
  // (all of them with `all`, at shutdown) and, with `all`, the legacy
  // stream's unanswered requests. Returns how many were answered.
  int AnswerOverdue(Clock::time_point now, bool all, const std::string& why);

  void Touch();
  Clock::time_point last_used();
  McpSession& mcp() { return mcp_; }
  std::atomic<int> streams{0};
  std::string client;  // the address that opened it (set once, before it is shared)

 private:
  bool ToRequestStream(const nlohmann::json& m, const jsonrpc::RequestId& request_id);
  void Route(const nlohmann::json& m);
  // With mu_ held: m goes to an open stream, or waits for one.
  void ToStreamsLocked(const nlohmann::json& m);
  void Prune();

  static constexpr size_t kMaxQueuedEvents = 1000;
  const bool legacy_;
  std::mutex mu_;
  std::map<jsonrpc::RequestId, std::shared_ptr<Waiter>> waiters_;
  std::multiset<jsonrpc::RequestId> pending_;
  std::vector<std::shared_ptr<http::Stream>> streams_;
  std::deque<std::string> events_;
  bool closed_ = false;
  Clock::time_point last_used_ = Clock::now();
  // Last: destroyed first, so that its destructor (which waits for the
  // session's calls) runs while Route() can still reach the members above.
  McpSession mcp_;
};

// Moves out of `list` the sessions that nothing else holds and whose calls
// are over, for the caller to destroy once its lock is released.
std::vector<std::shared_ptr<HttpSession>> TakeFinished(
    std::vector<std::shared_ptr<HttpSession>>& list);

// A session id: 32 hex digits from getrandom().
std::string RandomSessionId();

// The open sessions, and the closed ones whose calls still run: a call's
// thread holds the session (it answers through Route), so a session is
// destroyed only once nothing but this table holds it.
class SessionTable {
 public:
  using NewId = std::function<std::string()>;
  // pool: the server's threads for the sessions' calls.
  SessionTable(size_t max, NewId new_id, CallPool* pool = nullptr);
  // One client (its address) cannot lock every other out of the sessions
  // (256 initialize in 0.1 s did, for the idle timeout): a client at its
  // share, half of them, that opens another loses its own least recently
  // used idle session (no call running, no stream open: clients that never
  // send DELETE); with the table full, a client holding fewer than another
  // takes that one's least recently used idle session, and if no client
  // holds more than another, the least recently used idle session of any
  // (*evicted_one says one was ended). Otherwise *why says why not and what
  // the client can do.
  std::pair<std::string, std::shared_ptr<HttpSession>> Create(Server& server, bool legacy,
                                                              const std::string& client,
                                                              std::string* why, bool* evicted_one);
  std::shared_ptr<HttpSession> Find(const std::string& id);
  std::shared_ptr<HttpSession> Remove(const std::string& id);
  int ExpireIdle(std::chrono::seconds idle);
  // Destroys the closed sessions nothing else holds any more (their calls
  // are over). Returns how many closed ones remain.
  size_t Reap();
  std::vector<std::shared_ptr<HttpSession>> All();
  size_t size();
  void CloseAll();
  // Destroys every closed session; each first waits for its calls, which
  // CloseAll cancelled (they end within the executor's own bounds).
  void DestroyClosed();

 private:
  // With mu_ held: the idle session of `from` (null: of any client) used
  // least recently, or end.
  std::map<std::string, std::shared_ptr<HttpSession>>::iterator IdleVictimLocked(
      const std::string* from);

  const size_t max_, share_;
  const NewId new_id_;
  CallPool* const pool_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<HttpSession>> map_;
  std::vector<std::shared_ptr<HttpSession>> closing_;
};

}  // namespace mcpexec
