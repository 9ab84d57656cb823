#include "supervisor/sessions.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "base/log.h"

namespace mcpexec {

struct SessionPool::Entry {
  Key key;
  SessionRun run;
  std::deque<uint64_t> line;  // tickets, in arrival order; the front runs
  bool running = false;
  bool close_after = false;  // the connection ended while a cell ran
  bool handle = false;       // key.second is a handle the pool minted
  bool gone = false;         // a handle's session that ended: refused from now on
  uint64_t owner = 0;        // the connection that made it (a name's session ends with it)
  std::string restarted;     // a name's: why its last interpreter ended (CellOutcome::restarted)
  std::string client;        // who made it, for the fair share (Ask::client)
  Clock::time_point born{}, last_used{};
  std::condition_variable cv;
};

namespace {
// The fair share's key of an ask: its client, else its connection.
std::string ClientOf(const SessionPool::Ask& ask) {
  return ask.client.empty() ? "connection " + std::to_string(ask.connection) : ask.client;
}
}  // namespace

class SessionPool::Ticket {
 public:
  Ticket(SessionPool& pool, std::shared_ptr<Entry> entry, uint64_t id)
      : pool_(pool), entry_(std::move(entry)), id_(id) {}
  Ticket(const Ticket&) = delete;
  Ticket& operator=(const Ticket&) = delete;
  ~Ticket() { pool_.Leave(*this); }

 private:
  friend class SessionPool;
  SessionPool& pool_;
  std::shared_ptr<Entry> entry_;
  uint64_t id_;
  bool left_ = false;
};

SessionPool::SessionPool(const Config& config, Executor& executor, Metrics* metrics)
    : config_(config), executor_(executor), metrics_(metrics), handles_(config.handle_prefix) {
  sweeper_ = std::thread([this] { SweeperLoop(); });
}

SessionPool::~SessionPool() { Shutdown(); }

int64_t SessionPool::live() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(entries_.size());
}

const std::string& SessionPool::NameOf(const Ticket& t) { return t.entry_->key.second; }

SessionPool::Reservation SessionPool::Reserve(const Ask& ask) {
  Reservation r;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) {
    r.error = "the server is shutting down";
    return r;
  }
  const std::string start_new =
      "Start a new session with session: \"new\" and pass back the handle its result gives "
      "(in session).";
  std::shared_ptr<Entry> e;
  if (ask.session == kNew) {
    r.name = handles_.Mint();
    e = AddLocked({0, r.name}, ask.connection, ClientOf(ask), true);
  } else if (HandleBook::LooksLikeHandle(ask.session)) {
    r.name = ask.session;
    auto it = entries_.find({0, ask.session});
    if (it == entries_.end() || it->second->gone) {
      std::optional<std::string> why = handles_.WhyGone(ask.session);
      r.error = "session \"" + ask.session + "\" " +
                (why ? "has ended (" + *why + "): its state is gone. "
                     : std::string("is not a live session of this server: it was never made "
                                   "here, or it ended long ago. ")) +
                start_new;
      return r;
    }
    e = it->second;
  } else if (ask.stateless) {
    r.name = ask.session;
    r.error = "session \"" + ask.session +
              "\" is not a session handle: with protocol 2026-07-28 sessions are not named by "
              "the caller. " +
              start_new;
    return r;
  } else {
    r.name = ask.session;
    auto it = entries_.find({ask.connection, ask.session});
    e = it != entries_.end()
            ? it->second
            : AddLocked({ask.connection, ask.session}, ask.connection, ClientOf(ask), false);
  }
  if (!e) {
    r.full = true;
    if (metrics_) metrics_->RecordSessionRefusal("python");
    r.error =
        (ask.session == kNew ? std::string("a new session") : "session \"" + ask.session + "\"") +
        " cannot start: all " + std::to_string(entries_.size()) +
        " live Python sessions of this server (its limit, MCP_EXEC_MAX_PY_SESSIONS=" +
        std::to_string(config_.max_py_sessions) +
        ") have a call running or waiting, so none can give way. Retry when a call ends, use a "
        "session you already hold, or run without `session` (a fresh process per call).";
    return r;
  }
  uint64_t id = next_ticket_++;
  e->line.push_back(id);
  r.ticket = std::make_shared<Ticket>(*this, e, id);
  return r;
}

std::shared_ptr<SessionPool::Entry> SessionPool::AddLocked(const Key& key, uint64_t owner,
                                                           const std::string& client, bool handle) {
  if (static_cast<int64_t>(entries_.size()) >= config_.max_py_sessions && !MakeRoomLocked(client)) {
    return nullptr;
  }
  auto e = std::make_shared<Entry>();
  e->key = key;
  e->owner = owner;
  e->client = client;
  e->handle = handle;
  if (auto it = name_ended_.find(key); !handle && it != name_ended_.end()) {
    e->restarted = it->second;
    name_ended_.erase(it);
  }
  entries_.emplace(key, e);
  return e;
}

// The client that holds the most sessions gives way: its least recently
// used idle one ends. The asker is a client like the others (keyed on its
// address and clientInfo name, not its connection: a client that makes a
// connection per call, as protocol 2026-07-28 does, is still one client),
// and when it holds as many as anyone its own session goes. Failing that
// (the one holding the most has a call in each of its sessions), the least
// recently used idle session of any client gives way. A session with a
// call running or waiting never does.
bool SessionPool::MakeRoomLocked(const std::string& client) {
  std::map<std::string, size_t> held{{client, 0}};
  for (const auto& [key, e] : entries_) ++held[e->client];
  std::string most = client;
  for (const auto& [who, n] : held) {
    if (n > held[most]) most = who;
  }
  auto least_recent = [&](const std::string* of) {
    std::shared_ptr<Entry> victim;
    for (const auto& [key, e] : entries_) {
      if ((of && e->client != *of) || e->running || !e->line.empty()) continue;
      if (!victim || e->last_used < victim->last_used) victim = e;
    }
    return victim;
  };
  std::shared_ptr<Entry> victim = least_recent(&most);
  if (!victim) victim = least_recent(nullptr);
  if (!victim) return false;
  if (metrics_) metrics_->RecordSessionEviction("python");
  EndInterpreterLocked(*victim, "evicted");
  entries_.erase(victim->key);
  return true;
}

void SessionPool::Leave(Ticket& t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (t.left_) return;
  t.left_ = true;
  Entry& e = *t.entry_;
  auto pos = std::find(e.line.begin(), e.line.end(), t.id_);
  if (pos != e.line.end()) e.line.erase(pos);
  e.cv.notify_all();
  ForgetIfDoneLocked(t.entry_);
}

void SessionPool::ForgetIfDoneLocked(const std::shared_ptr<Entry>& e) {
  if (e->running || !e->line.empty() || e->run.started()) return;
  auto it = entries_.find(e->key);
  if (it != entries_.end() && it->second == e) entries_.erase(it);
}

void SessionPool::EndInterpreterLocked(Entry& e, const char* reason, const std::string& why) {
  if (!e.run.started()) return;
  auto age = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - e.born).count();
  // Never the handle: it is a bearer capability.
  log::Info("py_session_end", {{"connection", e.owner},
                               {"handle", e.handle},
                               {"cells", e.run.cells},
                               {"age_s", age},
                               {"reason", reason}});
  if (metrics_) metrics_->RecordPySessionEnd(reason);
  executor_.EndSession(e.run);
  e.run = SessionRun{};
  if (e.handle && std::string(reason) != "reset") {
    e.gone = true;
    handles_.Ended(e.key.second, why.empty() ? WhyEnded(reason) : why);
  } else if (!e.handle && std::string(reason) != "reset") {
    // A name starts afresh on its next call: remember why, for that call.
    e.restarted = why.empty() ? WhyEnded(reason) : why;
    if (name_ended_.emplace(e.key, e.restarted).second) name_ended_order_.push_back(e.key);
    name_ended_[e.key] = e.restarted;
    while (name_ended_order_.size() > HandleBook::kRemembered) {
      name_ended_.erase(name_ended_order_.front());
      name_ended_order_.pop_front();
    }
  }
}

std::string SessionPool::WhyEnded(const char* reason) const {
  const std::string r = reason;
  if (r == "idle") {
    return "no call for " + std::to_string(config_.py_session_idle_s) +
           " s (MCP_EXEC_PY_SESSION_IDLE_S)";
  }
  if (r == "lifetime") {
    return "it reached its longest life, " + std::to_string(config_.py_session_max_s) +
           " s (MCP_EXEC_PY_SESSION_MAX_S)";
  }
  if (r == "evicted") {
    return "evicted: the server holds its limit of " + std::to_string(config_.max_py_sessions) +
           " sessions (MCP_EXEC_MAX_PY_SESSIONS) and needed room for a new one; of the client "
           "holding the most sessions, this one was idle the longest";
  }
  if (r == "shutdown") return "the server shut down";
  if (r == "interpreter_ended") return "its interpreter ended";
  return r;
}

namespace {

// The interpreter died between calls (a thread of its own passed the CPU
// limit, say), or the sandbox that held it restarted.
bool Gone(const SessionRun& run) {
  if (!run.started()) return false;
  std::lock_guard<std::mutex> lock(run.slot->mu);
  return run.slot->exited || run.slot->lost;
}

}  // namespace

SessionPool::CellOutcome SessionPool::Run(Ticket& t, bool reset, bool end, const RunRequest& req,
                                          CancelToken& cancel, const Executor::Progress& progress) {
  const auto queued_at = Clock::now();
  Entry& e = *t.entry_;
  cancel.OnCancel([this, &e] {
    std::lock_guard<std::mutex> lock(mu_);
    e.cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu_);
  e.cv.wait(lock, [&] {
    return stopping_ || cancel.cancelled() || (!e.line.empty() && e.line.front() == t.id_);
  });
  lock.unlock();
  cancel.OnCancel(nullptr);
  lock.lock();
  CellOutcome out;
  if (stopping_ || cancel.cancelled() || e.line.empty() || e.line.front() != t.id_) {
    executor_.Withdraw();
    const bool by_client = cancel.cancelled() && cancel.reason() == CancelReason::kClient;
    if (metrics_) {
      metrics_->RecordFailure(
          RunFailureName(by_client ? RunFailure::kCancelled : RunFailure::kShutdown));
    }
    out.result = std::string(by_client ? "the call was cancelled before it started"
                                       : "the server is shutting down; this call was still queued "
                                         "behind another call of its session and did not run");
    return out;
  }
  // A handle's session that ended (between calls, or while this call
  // waited its turn) never comes back under the same handle.
  if (e.handle && !e.gone && !reset && Gone(e.run)) {
    EndInterpreterLocked(e, "interpreter_ended", "its interpreter ended between calls");
  }
  if (e.handle && e.gone) {
    executor_.Withdraw();
    std::optional<std::string> why = handles_.WhyGone(e.key.second);
    out.result = "the session has ended (" + why.value_or("ended") +
                 "): its state is gone. Start a new session with session: \"new\".";
    return out;
  }
  e.running = true;
  if (reset) EndInterpreterLocked(e, "reset");
  if (Gone(e.run)) EndInterpreterLocked(e, "interpreter_ended");
  if (!e.run.started()) {
    out.is_new = true;
    // Told once, by the call that starts the name's session again.
    out.restarted = std::move(e.restarted);
    e.restarted.clear();
    name_ended_.erase(e.key);
    e.run.cpu_budget_s = config_.py_session_max_s;
    e.born = Clock::now();
    if (metrics_) metrics_->RecordPySessionStart();
    log::Info("py_session_start", {{"connection", e.owner},
                                   {"handle", e.handle},
                                   {"max_s", config_.py_session_max_s},
                                   {"idle_s", config_.py_session_idle_s},
                                   {"memory_limit_mb", config_.memory_limit_mb},
                                   {"live", entries_.size()}});
  }
  const auto waited = Clock::now() - queued_at;
  lock.unlock();
  out.result = executor_.RunCell(e.run, req, cancel, progress,
                                 std::chrono::milliseconds(config_.py_session_interrupt_ms));
  if (auto* o = std::get_if<RunOutcome>(&out.result)) {
    o->queue_ms += std::chrono::duration_cast<std::chrono::milliseconds>(waited).count();
  }
  lock.lock();
  out.ended = EndAfterCellLocked(e, cancel, end);
  e.running = false;
  t.left_ = true;
  if (!e.line.empty() && e.line.front() == t.id_) e.line.pop_front();
  e.cv.notify_all();
  ForgetIfDoneLocked(t.entry_);
  return out;
}

// With mu_ held, after a cell: why its session ends now (it is ended), or
// "" when it lives on.
std::string SessionPool::EndAfterCellLocked(Entry& e, const CancelToken& cancel, bool end) {
  const auto now = Clock::now();
  e.last_used = now;
  std::string ended;
  if (stopping_ || server_stopping_ ||
      (cancel.cancelled() && cancel.reason() == CancelReason::kShutdown)) {
    ended = "the server is shutting down";
    EndInterpreterLocked(e, "shutdown");
  } else if (!e.run.ended.empty()) {
    ended = e.run.ended;
    EndInterpreterLocked(e, "interpreter_ended", "its interpreter ended: " + e.run.ended);
  } else if (end) {
    ended = "the call asked for it (end: true)";
    EndInterpreterLocked(e, "ended_by_call", ended);
  } else if (e.close_after) {
    ended = "its connection ended";
    EndInterpreterLocked(e, "connection_closed");
  } else if (now - e.born >= std::chrono::seconds(config_.py_session_max_s)) {
    ended = "it reached its longest life, " + std::to_string(config_.py_session_max_s) +
            " s (MCP_EXEC_PY_SESSION_MAX_S)";
    EndInterpreterLocked(e, "lifetime");
  }
  if (e.handle && !ended.empty()) {
    ended += "; its handle is no longer valid: start a new session with session: \"new\"";
  }
  return ended;
}

void SessionPool::Stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  server_stopping_ = true;
}

void SessionPool::EndConnection(uint64_t connection) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.lower_bound({connection, std::string()});
       it != entries_.end() && it->first.first == connection;) {
    std::shared_ptr<Entry> e = it->second;
    ++it;
    if (e->running) {
      e->close_after = true;  // ended when its cell returns
      continue;
    }
    EndInterpreterLocked(*e, server_stopping_ ? "shutdown" : "connection_closed");
    ForgetIfDoneLocked(e);
  }
}

void SessionPool::SweepLocked(Clock::time_point now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    std::shared_ptr<Entry> e = it->second;
    ++it;
    if (e->running || !e->line.empty() || !e->run.started()) continue;
    if (now - e->last_used >= std::chrono::seconds(config_.py_session_idle_s)) {
      EndInterpreterLocked(*e, "idle");
    } else if (now - e->born >= std::chrono::seconds(config_.py_session_max_s)) {
      EndInterpreterLocked(*e, "lifetime");
    } else if (Gone(e->run)) {
      EndInterpreterLocked(*e, "interpreter_ended");
    }
    ForgetIfDoneLocked(e);
  }
}

void SessionPool::SweeperLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    sweeper_cv_.wait_for(lock, std::chrono::milliseconds(500));
    if (stopping_) break;
    SweepLocked(Clock::now());
  }
}

void SessionPool::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [key, e] : entries_) e->cv.notify_all();
  }
  sweeper_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    std::shared_ptr<Entry> e = it->second;
    ++it;
    if (e->running) continue;  // its call ends it (the shutdown cancels the call)
    EndInterpreterLocked(*e, "shutdown");
    ForgetIfDoneLocked(e);
  }
}

}  // namespace mcpexec
