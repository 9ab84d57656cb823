// Live Python sessions: one interpreter that keeps its state between calls
// (a SessionRun of the executor), named by a handle the server minted
// (session "new"; usable from any connection and either protocol era) or,
// in the 2025 era, by a name a connection chose (that connection's only). Calls
// to one session run one at a time, in the order they were accepted; an
// idle session holds no run slot. A session ends on reset, when its
// connection ends, after its idle time, past its longest life, when its
// interpreter dies, and at shutdown; its processes and directory go with it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <variant>

#include "base/cancel.h"
#include "base/metrics.h"
#include "model/config.h"
#include "supervisor/executor.h"
#include "supervisor/session_handles.h"

namespace mcpexec {

class SessionPool {
 public:
  SessionPool(const Config& config, Executor& executor, Metrics* metrics);
  ~SessionPool();
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  // A call's place in its session's line, taken when the call is accepted
  // (so calls run in arrival order). Giving it up unused leaves the line.
  class Ticket;
  struct Ask {
    uint64_t connection = 0;
    bool stateless = false;  // protocol 2026-07-28: "new" and handles only
    std::string session;     // "new", a handle, or a name
    // Who asks, for the fair share: the peer and its clientInfo name (one
    // client whatever connection, or call, it comes on). "" : the connection.
    std::string client;
  };
  struct Reservation {
    std::shared_ptr<Ticket> ticket;  // null: refused, for `error`
    std::string name;                // the session's handle (minted for "new") or name
    bool full = false;               // refused for MCP_EXEC_MAX_PY_SESSIONS
    std::string error;
  };
  // "new" mints a handle and starts a session under it; a handle finds its
  // live session (an unknown or ended one is refused, saying which); a name
  // is the connection's own session, started on first use (2025 era only).
  Reservation Reserve(const Ask& ask);
  // The session's name in messages and results (its handle, or its name).
  static const std::string& NameOf(const Ticket& t);
  static constexpr const char* kNew = "new";

  struct CellOutcome {
    std::variant<RunOutcome, std::string> result;  // a tool error as text
    bool is_new = false;                           // this call started the interpreter
    // A name's session started again (2025 era): why the one before ended,
    // in plain words, so that a NameError in this call has its cause; "" when
    // the name is new or its session lived on.
    std::string restarted;
    std::string ended;  // set when the interpreter is gone after this call: why
  };
  // Waits for the ticket's turn (counted as queue time), then runs the code
  // as the session's next cell. reset: a fresh interpreter first; end: the
  // session ends after the cell.
  CellOutcome Run(Ticket& ticket, bool reset, bool end, const RunRequest& req, CancelToken& cancel,
                  const Executor::Progress& progress);

  // The connection is gone: every session it named ends.
  void EndConnection(uint64_t connection);
  // The server is going down (a signal): sessions that end with their
  // connection from now on are counted as ended by the shutdown.
  void Stopping();
  // Ends every session (call before the executor's Shutdown).
  void Shutdown();

  int64_t live() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry;
  using Key = std::pair<uint64_t, std::string>;
  // With mu_ held: ends the interpreter of e (if any), records why. A
  // handle's session ends for good (but on reset): the handle is refused
  // from then on, with `why` (plain words; derived from reason if empty).
  void EndInterpreterLocked(Entry& e, const char* reason, const std::string& why = "");
  std::string WhyEnded(const char* reason) const;
  std::string EndAfterCellLocked(Entry& e, const CancelToken& cancel, bool end);
  // With mu_ held: drops the entry when nothing is left of it.
  void ForgetIfDoneLocked(const std::shared_ptr<Entry>& e);
  void Leave(Ticket& t);
  // With mu_ held, the pool full: ends the least recently used idle session
  // of the client holding the most (the asker's own when it holds as many
  // as anyone); failing that, of any client. False: every session has a
  // call running or waiting.
  bool MakeRoomLocked(const std::string& client);
  // With mu_ held: a new entry for key, owned by connection `owner` and
  // `client`, or null (full).
  std::shared_ptr<Entry> AddLocked(const Key& key, uint64_t owner, const std::string& client,
                                   bool handle);
  void SweeperLoop();
  void SweepLocked(Clock::time_point now);

  const Config& config_;
  Executor& executor_;
  Metrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable sweeper_cv_;
  std::map<Key, std::shared_ptr<Entry>> entries_;  // a handle's key: {0, handle}
  HandleBook handles_;
  // Why each named session's last interpreter ended (for the next call with
  // the name: CellOutcome::restarted), the oldest forgotten past
  // HandleBook::kRemembered.
  std::map<Key, std::string> name_ended_;
  std::deque<Key> name_ended_order_;
  uint64_t next_ticket_ = 1;
  bool stopping_ = false;
  bool server_stopping_ = false;  // Stopping(): connections end for the shutdown
  std::thread sweeper_;
};

}  // namespace mcpexec
