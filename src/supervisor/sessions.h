// Live Python sessions: a name on one connection stands for one interpreter
// that keeps its state between calls (a SessionRun of the executor). Calls
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
#include "base/config.h"
#include "base/metrics.h"
#include "supervisor/executor.h"

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
  // Null, with *error naming the limit, when the name would start a session
  // past MCP_EXEC_MAX_PY_SESSIONS.
  std::shared_ptr<Ticket> Reserve(uint64_t connection, const std::string& name, std::string* error);

  struct CellOutcome {
    std::variant<RunOutcome, std::string> result;  // a tool error as text
    bool is_new = false;                           // this call started the interpreter
    std::string ended;  // set when the interpreter is gone after this call: why
  };
  // Waits for the ticket's turn (counted as queue time), then runs the code
  // as the session's next cell. reset: a fresh interpreter first.
  CellOutcome Run(Ticket& ticket, bool reset, const RunRequest& req, CancelToken& cancel,
                  const Executor::Progress& progress);

  // The connection is gone: every session it named ends.
  void EndConnection(uint64_t connection);
  // Ends every session (call before the executor's Shutdown).
  void Shutdown();

  int64_t live() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry;
  using Key = std::pair<uint64_t, std::string>;
  // With mu_ held: ends the interpreter of e (if any), records why.
  void EndInterpreterLocked(Entry& e, const char* reason);
  // With mu_ held: drops the entry when nothing is left of it.
  void ForgetIfDoneLocked(const std::shared_ptr<Entry>& e);
  void Leave(Ticket& t);
  // With mu_ held, the pool full: ends another connection's idle session
  // if that one holds more than its share. False: no room.
  bool MakeRoomLocked(uint64_t connection);
  void SweeperLoop();
  void SweepLocked(Clock::time_point now);

  const Config& config_;
  Executor& executor_;
  Metrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable sweeper_cv_;
  std::map<Key, std::shared_ptr<Entry>> entries_;
  uint64_t next_ticket_ = 1;
  bool stopping_ = false;
  std::thread sweeper_;
};

}  // namespace mcpexec
