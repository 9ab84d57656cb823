#include "transport/http_session.h"

#include <algorithm>
#include <cstdlib>

#include "base/log.h"
#include "base/random.h"
#include "model/fair_share.h"

namespace mcpexec {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string LenientDump(const json& msg) {
  return msg.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string SseEvent(const json& msg) {
  return "event: message\ndata: " + LenientDump(msg) + "\n\n";
}

void Waiter::DeliverLocked(const json& m) {
  answered = true;
  if (exchange) {
    http::Response r;
    r.content_type = "application/json";
    r.body = LenientDump(m);
    r.headers = std::move(headers);
    std::exchange(exchange, nullptr)->Reply(std::move(r));
    if (auto done = std::exchange(on_done, nullptr)) done();
    return;
  }
  stream->Write(SseEvent(m));
  stream->End();
}

namespace {

bool IsProgress(const json& m) {
  return m.is_object() && m.value("method", "") == "notifications/progress";
}

}  // namespace

// ------------------------------------------------------------ HttpSession

HttpSession::HttpSession(Server& server, bool legacy, bool stateless, const std::string& peer,
                         CallPool* pool)
    // Protocol 2026-07-28 over HTTP is routed before a session is found; a
    // session an initialize made speaks 2025 only.
    : legacy_(legacy),
      mcp_(
          server, [this](const json& m) { Route(m); }, McpSession::Options{stateless, peer, pool}) {
  // Streamable HTTP: a request's progress goes on that request's stream.
  if (!legacy_) {
    mcp_.SetRelatedSender([this](const json& m, const jsonrpc::RequestId& request_id) {
      return ToRequestStream(m, request_id);
    });
  }
}

std::shared_ptr<Waiter> HttpSession::Expect(const jsonrpc::RequestId& id) {
  auto w = std::make_shared<Waiter>(id);
  std::lock_guard<std::mutex> lock(mu_);
  waiters_[id] = w;
  return w;
}

void HttpSession::Forget(const jsonrpc::RequestId& id, const std::shared_ptr<Waiter>& w) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = waiters_.find(id);
  if (it != waiters_.end() && it->second == w) waiters_.erase(it);
}

void HttpSession::ExpectOnStream(const jsonrpc::RequestId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.insert(id);
}

void HttpSession::NotExpected(const jsonrpc::RequestId& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(id);
  if (it != pending_.end()) pending_.erase(it);
}

void HttpSession::Attach(std::shared_ptr<http::Stream> s) {
  std::lock_guard<std::mutex> lock(mu_);
  Prune();
  while (!events_.empty()) {
    s->Write(std::move(events_.front()));
    events_.pop_front();
  }
  streams_.push_back(std::move(s));
}

void HttpSession::Detached() {
  std::lock_guard<std::mutex> lock(mu_);
  Prune();
}

void HttpSession::EndStreams() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : streams_) s->End();
}

void HttpSession::Close() {
  std::vector<std::shared_ptr<Waiter>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    for (auto& s : streams_) s->End();
    for (auto& [k, w] : waiters_) waiting.push_back(w);
    waiters_.clear();
  }
  for (auto& w : waiting) {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->stream) w->stream->End();
    // A POST that awaits JSON gets an answer that says why none is coming.
    if (w->exchange && !w->answered) {
      w->DeliverLocked(jsonrpc::Error(
          w->id, jsonrpc::kInternalError,
          "the session ended (DELETE, idle past MCP_EXEC_SESSION_IDLE_S, evicted for room, or "
          "the server stopping) before the call's answer; its run was ended"));
    }
    // The stream's on_close holds this session: no way back to it is kept,
    // so nothing holds itself once the session goes.
    w->stream = nullptr;
  }
  mcp_.CancelAll();
}

bool HttpSession::closed() {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

bool HttpSession::Quiet() {
  std::vector<std::shared_ptr<Waiter>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pending_.empty()) return false;
    for (auto& s : streams_) {
      if (!s->Flushed()) return false;
    }
    for (auto& [k, w] : waiters_) waiting.push_back(w);
  }
  for (auto& w : waiting) {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->stream && !w->answered) return false;
  }
  return true;
}

int HttpSession::AnswerOverdue(Clock::time_point now, bool all, const std::string& why) {
  std::vector<std::shared_ptr<Waiter>> waiting;
  std::vector<jsonrpc::RequestId> legacy_ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [k, w] : waiters_) waiting.push_back(w);
    if (all) legacy_ids.assign(pending_.begin(), pending_.end());
  }
  int n = 0;
  for (auto& w : waiting) {
    std::lock_guard<std::mutex> lock(w->mu);
    if (!w->AttachedLocked() || w->answered || (!all && now < w->give_up)) continue;
    w->DeliverLocked(jsonrpc::Error(w->id, jsonrpc::kInternalError, why));
    ++n;
  }
  for (const auto& id : legacy_ids) {
    Route(jsonrpc::Error(id, jsonrpc::kInternalError, why));
    ++n;
  }
  return n;
}

void HttpSession::Touch() {
  std::lock_guard<std::mutex> lock(mu_);
  last_used_ = Clock::now();
}

Clock::time_point HttpSession::last_used() {
  std::lock_guard<std::mutex> lock(mu_);
  return last_used_;
}

bool HttpSession::ToRequestStream(const json& m, const jsonrpc::RequestId& request_id) {
  std::shared_ptr<Waiter> w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = waiters_.find(request_id);
    if (it == waiters_.end()) return false;
    w = it->second;
  }
  std::lock_guard<std::mutex> lock(w->mu);
  if (w->answered) return false;
  // (A POST that awaits JSON sends no progress: it asked for none.)
  if (!w->stream) {
    if (IsProgress(m)) return true;  // stale by the time the stream opens
    if (w->early.size() < Waiter::kMaxEarly) w->early.push_back(SseEvent(m));
    return true;
  }
  // Progress is never queued behind progress: while a client has not read
  // the last one, a newer one is dropped (the next says more anyway).
  if (IsProgress(m) && !w->stream->Flushed()) return true;
  w->stream->Write(SseEvent(m));
  return true;
}

void HttpSession::ToStreamsLocked(const json& m) {
  if (closed_) return;
  std::string event = SseEvent(m);
  for (auto& s : streams_) {
    if (s->Open()) {
      if (!IsProgress(m) || s->Flushed()) s->Write(std::move(event));
      return;
    }
  }
  if (IsProgress(m)) return;  // stale by the time a stream opens
  // No stream yet (or any more): kept for the next one, within reason.
  if (events_.size() >= kMaxQueuedEvents) events_.pop_front();
  events_.push_back(std::move(event));
}

void HttpSession::Route(const json& m) {
  // An answer (or an error) to one of the client's requests.
  const std::optional<jsonrpc::RequestId> id =
      m.is_object() && m.contains("id") ? jsonrpc::RequestId::From(m["id"]) : std::nullopt;
  std::shared_ptr<Waiter> w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (id && !legacy_) {
      auto it = waiters_.find(*id);
      if (it != waiters_.end()) w = it->second;
    }
    if (!w) {
      if (id && legacy_) {
        auto it = pending_.find(*id);
        if (it != pending_.end()) pending_.erase(it);
      }
      ToStreamsLocked(m);
      return;
    }
  }
  std::lock_guard<std::mutex> lock(w->mu);
  if (w->answered) return;
  if (w->AttachedLocked()) {
    w->DeliverLocked(m);
  } else {
    w->answer = m;
  }
}

void HttpSession::Prune() {
  streams_.erase(std::remove_if(streams_.begin(), streams_.end(),
                                [](const std::shared_ptr<http::Stream>& s) { return !s->Open(); }),
                 streams_.end());
}

// ----------------------------------------------------------- SessionTable

std::string RandomSessionId() {
  unsigned char bytes[16];
  RandomBytes(bytes, sizeof bytes);
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) id += hex[b >> 4], id += hex[b & 15];
  return id;
}

SessionTable::SessionTable(size_t max, NewId new_id, CallPool* pool)
    : max_(max), share_(std::max<size_t>(1, max / 2)), new_id_(std::move(new_id)), pool_(pool) {}

std::map<std::string, std::shared_ptr<HttpSession>>::iterator SessionTable::IdleVictimLocked(
    const std::string* from) {
  auto victim = map_.end();
  for (auto it = map_.begin(); it != map_.end(); ++it) {
    if ((from && it->second->client != *from) || it->second->streams != 0 ||
        it->second->mcp().in_flight() != 0) {
      continue;
    }
    if (victim == map_.end() || it->second->last_used() < victim->second->last_used()) {
      victim = it;
    }
  }
  return victim;
}

std::pair<std::string, std::shared_ptr<HttpSession>> SessionTable::Create(
    Server& server, bool legacy, const std::string& client, std::string* why, bool* evicted_one) {
  *evicted_one = false;
  std::shared_ptr<HttpSession> evicted;
  const char* evicted_why = "";
  std::pair<std::string, std::shared_ptr<HttpSession>> made;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, size_t> held{{client, 0}};
    for (const auto& [id, s] : map_) ++held[s->client];
    // Whose idle session goes, if one must.
    const bool at_share = held[client] >= share_, full = map_.size() >= max_;
    const std::optional<std::string> from = WhoGivesWay(held, client, share_, full);
    if (at_share || full) {
      // The client at its share gives way itself; with the table full, the
      // client that holds the most does, and if none holds more (many
      // clients with a session each that they never ended: clients that
      // close without DELETE), the least recently used idle session of any.
      auto victim = IdleVictimLocked(from ? &*from : nullptr);
      evicted_why = !from             ? "idle the longest, and the table was full"
                    : *from == client ? "idle, and its client opened another past its share"
                                      : "idle, and its client held more than another";
      if (victim == map_.end() && full && !at_share) {
        victim = IdleVictimLocked(nullptr);
        evicted_why = "idle the longest, and the table was full";
      }
      if (victim == map_.end()) {
        *why = at_share ? "too many sessions from this client: it holds " +
                              std::to_string(held[client]) +
                              ", half of MCP_EXEC_MAX_SESSIONS=" + std::to_string(max_) +
                              ", and each has a call or a stream open. End one with DELETE, or "
                              "retry when one of its calls ends"
                        : "too many sessions: all " + std::to_string(map_.size()) +
                              " (MCP_EXEC_MAX_SESSIONS=" + std::to_string(max_) +
                              ") have a call running or a stream open, so none can give way. Retry "
                              "when a call ends, or end a session you hold with DELETE";
        return {"", nullptr};
      }
      *evicted_one = true;
      evicted = victim->second;
      closing_.push_back(evicted);
      map_.erase(victim);
    }
    std::string id = new_id_();
    auto s = std::make_shared<HttpSession>(server, legacy, false, client, pool_);
    s->client = client;
    map_[id] = s;
    made = {id, s};
  }
  if (evicted) {
    evicted->Close();
    log::Info("session_evicted", {{"why", evicted_why}, {"share", share_}, {"max", max_}});
  }
  return made;
}

std::shared_ptr<HttpSession> SessionTable::Find(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(id);
  if (it == map_.end()) return nullptr;
  it->second->Touch();
  return it->second;
}

std::shared_ptr<HttpSession> SessionTable::Remove(const std::string& id) {
  std::shared_ptr<HttpSession> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(id);
    if (it == map_.end()) return nullptr;
    s = it->second;
    map_.erase(it);
    closing_.push_back(s);
  }
  s->Close();
  return s;
}

int SessionTable::ExpireIdle(std::chrono::seconds idle) {
  std::vector<std::shared_ptr<HttpSession>> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = Clock::now();
    for (auto it = map_.begin(); it != map_.end();) {
      if (it->second->streams == 0 && it->second->mcp().in_flight() == 0 &&
          now - it->second->last_used() > idle) {
        expired.push_back(it->second);
        closing_.push_back(it->second);
        it = map_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : expired) s->Close();
  return static_cast<int>(expired.size());
}

std::vector<std::shared_ptr<HttpSession>> TakeFinished(
    std::vector<std::shared_ptr<HttpSession>>& list) {
  std::vector<std::shared_ptr<HttpSession>> done;
  for (auto it = list.begin(); it != list.end();) {
    if (it->use_count() == 1 && (*it)->mcp().in_flight() == 0) {
      done.push_back(std::move(*it));
      it = list.erase(it);
    } else {
      ++it;
    }
  }
  return done;
}

size_t SessionTable::Reap() {
  std::vector<std::shared_ptr<HttpSession>> done;  // destroyed after the lock
  std::lock_guard<std::mutex> lock(mu_);
  done = TakeFinished(closing_);
  return closing_.size();
}

std::vector<std::shared_ptr<HttpSession>> SessionTable::All() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<HttpSession>> out;
  for (auto& [id, s] : map_) out.push_back(s);
  return out;
}

size_t SessionTable::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

void SessionTable::CloseAll() {
  std::vector<std::shared_ptr<HttpSession>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, s] : map_) all.push_back(s), closing_.push_back(s);
    map_.clear();
  }
  for (auto& s : all) s->Close();
}

void SessionTable::DestroyClosed() {
  std::vector<std::shared_ptr<HttpSession>> closed;  // destroyed after the lock
  std::lock_guard<std::mutex> lock(mu_);
  closed.swap(closing_);
}

}  // namespace mcpexec
