#include "tool/warm_up_gate.h"

#include <memory>
#include <utility>

#include "tool/contract.h"

namespace mcpexec {

using json = nlohmann::json;

void WarmUpGate::Open(ToolBackend& tools, ServerHealth& health) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tools_ = &tools;
    health_ = &health;
  }
  cv_.notify_all();
}

void WarmUpGate::Fail(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tools_ != nullptr || !failed_.empty()) return;
    failed_ = why;
  }
  cv_.notify_all();
}

ToolBackend* WarmUpGate::Tools(std::string* why) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (why) *why = failed_;
  return tools_;
}

json WarmUpGate::ToolDescriptor() const {
  std::string why;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return tools_ != nullptr || !failed_.empty(); });
    if (tools_ == nullptr) why = failed_;
  }
  if (why.empty()) return Tools()->ToolDescriptor();
  // The server is going down: the tool as the contract has it, and why.
  return {{"name", ExecToolName()},
          {"title", "Execute Python"},
          {"description", "Run Python code. Not available now: " + why},
          {"inputSchema", ExecInputSchema()},
          {"outputSchema", ExecOutputSchema()}};
}

std::string WarmUpGate::ToolName() const { return ExecToolName(); }

std::string WarmUpGate::Instructions() const { return ExecInstructions(config_); }

std::string WarmUpGate::CacheScope() const { return ExecCacheScope(config_); }

std::variant<ToolBackend::Work, json> WarmUpGate::Accept(const json& arguments,
                                                         const CallContext& context) {
  uint64_t number = 0;
  ToolBackend* tools = nullptr;
  std::string failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Open, with no early call still waiting for its turn: straight on (no
    // call is early from then on).
    if (tools_ != nullptr && turn_ == next_early_) tools = tools_;
    failed = failed_;
  }
  if (tools != nullptr) return tools->Accept(arguments, context);
  if (!failed.empty()) return ToolErrorResult(failed);
  // Arguments the contract refuses are said at once; they need no sandbox.
  auto validated = ValidateExecArguments(arguments, config_);
  if (auto* err = std::get_if<std::string>(&validated)) return ToolErrorResult(*err);
  {
    std::lock_guard<std::mutex> lock(mu_);
    number = next_early_++;
  }
  // Its turn is passed on also if the work is dropped without running.
  auto turn = std::shared_ptr<uint64_t>(new uint64_t(number), [this](uint64_t* n) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (*n >= turn_ && left_.count(*n) == 0) PassTurnLocked(*n);
    }
    cv_.notify_all();
    delete n;
  });
  return Work([this, turn, arguments, context](CancelToken& cancel, const Progress& progress) {
    return AcceptLate(*turn, arguments, context, cancel, progress);
  });
}

void WarmUpGate::PassTurnLocked(uint64_t number) {
  if (number == turn_) {
    ++turn_;
  } else {
    left_.insert(number);
  }
  while (left_.erase(turn_) > 0) ++turn_;
}

json WarmUpGate::AcceptLate(uint64_t number, const json& arguments, const CallContext& context,
                            CancelToken& cancel, const Progress& progress) {
  cancel.OnCancel([this] {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] {
    return (tools_ != nullptr && turn_ == number) || !failed_.empty() || cancel.cancelled();
  });
  // A call cancelled while it waited never takes a place: it passes its turn.
  if (tools_ == nullptr || turn_ != number || cancel.cancelled()) {
    PassTurnLocked(number);
    const std::string failed = failed_;
    lock.unlock();
    cv_.notify_all();
    cancel.OnCancel(nullptr);
    if (cancel.cancelled()) {
      return ToolErrorResult(cancel.reason() == CancelReason::kShutdown
                                 ? "the server stopped before the code ran"
                                 : "cancelled before the code ran");
    }
    return ToolErrorResult(failed.empty() ? "the server is stopping" : failed);
  }
  ToolBackend* tools = tools_;
  lock.unlock();
  cancel.OnCancel(nullptr);
  // Accept takes the call's place (its slot, its session's line) before the
  // next early call's turn.
  auto accepted = tools->Accept(arguments, context);
  lock.lock();
  PassTurnLocked(number);
  lock.unlock();
  cv_.notify_all();
  if (auto* answer = std::get_if<json>(&accepted)) return *answer;
  return std::get<Work>(accepted)(cancel, progress);
}

void WarmUpGate::ConnectionEnded(uint64_t connection) {
  if (ToolBackend* tools = Tools()) tools->ConnectionEnded(connection);
}

void WarmUpGate::ServerStopping() {
  if (ToolBackend* tools = Tools()) tools->ServerStopping();
}

bool WarmUpGate::Ready() const {
  ServerHealth* health = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    health = health_;
  }
  return health != nullptr && health->Ready();
}

std::string WarmUpGate::MetricsText(int64_t sessions, int64_t streams) const {
  ServerHealth* health = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    health = health_;
  }
  if (health != nullptr) return health->MetricsText(sessions, streams);
  Metrics::Gauges g;
  g.sessions = sessions;
  g.streams = streams;
  return metrics_.Render(g);
}

void WarmUpGate::RecordMcpSessionTable(bool evicted) {
  if (evicted) {
    metrics_.RecordSessionEviction("mcp");
  } else {
    metrics_.RecordSessionRefusal("mcp");
  }
}

}  // namespace mcpexec
