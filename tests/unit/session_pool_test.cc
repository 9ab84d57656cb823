// The session pool against a scripted sandbox (scripted_sandbox.h): how
// Python sessions are made, found, lined up, refused, evicted and ended,
// with the executor's real cells under them, without a zygote or CPython.
// Each test makes its own folder for the sessions' directories and removes
// it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <variant>

#include "base/cancel.h"
#include "base/metrics.h"
#include "model/config.h"
#include "scripted_executor.h"
#include "supervisor/scheduler.h"
#include "supervisor/sessions.h"

namespace mcpexec {
namespace {

using testing::RunScript;
using testing::ScriptedSandbox;
using namespace std::chrono_literals;
using Ask = SessionPool::Ask;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class SessionPoolTest : public testing::ScriptedExecutorTest {
 protected:
  SessionPoolTest() : ScriptedExecutorTest("session-pool") {}
  void SetUp() override {
    ScriptedExecutorTest::SetUp();
    config_.max_concurrent = 4;
    config_.max_py_sessions = 4;
    config_.py_session_interrupt_ms = 300;
  }
  void TearDown() override {
    if (pool_) pool_->Shutdown();
    pool_.reset();
    ScriptedExecutorTest::TearDown();
  }
  SessionPool& Start() {
    pool_ = std::make_unique<SessionPool>(config_, StartExecutor(), &metrics_);
    return *pool_;
  }
  // A place in the session's line, as the exec tool takes it: admitted
  // first, then reserved. Must succeed.
  std::shared_ptr<SessionPool::Ticket> Take(const Ask& ask, std::string* name = nullptr) {
    EXPECT_TRUE(scheduler_->Admit());
    SessionPool::Reservation r = pool_->Reserve(ask);
    EXPECT_TRUE(r.ticket) << r.error;
    if (!r.ticket) scheduler_->Withdraw();
    if (name) *name = r.name;
    return r.ticket;
  }
  // A reservation that must be refused: its message.
  std::string Refusal(const Ask& ask, bool* full = nullptr) {
    SessionPool::Reservation r = pool_->Reserve(ask);
    EXPECT_FALSE(r.ticket) << "reserved where a refusal was due";
    if (full) *full = r.full;
    return r.error;
  }
  SessionPool::CellOutcome Run(SessionPool::Ticket& t, bool reset = false, bool end = false) {
    CancelToken cancel;
    return Run(t, cancel, reset, end);
  }
  SessionPool::CellOutcome Run(SessionPool::Ticket& t, CancelToken& cancel, bool reset = false,
                               bool end = false) {
    RunRequest req;
    req.code = "x = 1";
    req.timeout_s = 10;
    return pool_->Run(t, reset, end, req, cancel, nullptr);
  }
  // A cell run to its end in a fresh ticket; its stdout.
  std::string Cell(const Ask& ask, bool* is_new = nullptr) {
    auto t = Take(ask);
    if (!t) return "";
    SessionPool::CellOutcome out = Run(*t);
    if (is_new) *is_new = out.is_new;
    if (auto* error = std::get_if<std::string>(&out.result)) {
      ADD_FAILURE() << "tool error: " << *error;
      return "";
    }
    return std::get<RunOutcome>(out.result).stdout_data;
  }
  void PushOut(const std::string& out) {
    RunScript s;
    s.out = out;
    sandbox_.Push(s);
  }
  // Waits (at most 10 s) for the pool to hold `n` sessions.
  bool WaitLive(int64_t n) {
    for (auto until = std::chrono::steady_clock::now() + 10s;
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(20ms)) {
      if (pool_->live() == n) return true;
    }
    return pool_->live() == n;
  }

  std::unique_ptr<SessionPool> pool_;
};

TEST_F(SessionPoolTest, ANewSessionMintsAHandleAndKeepsItsInterpreter) {
  Start();
  std::string handle;
  auto t = Take({1, true, SessionPool::kNew, "client"}, &handle);
  ASSERT_TRUE(t);
  EXPECT_TRUE(HandleBook::LooksLikeHandle(handle)) << handle;
  EXPECT_EQ(SessionPool::NameOf(*t), handle);
  PushOut("first\n");
  SessionPool::CellOutcome first = Run(*t);
  ASSERT_TRUE(std::holds_alternative<RunOutcome>(first.result));
  EXPECT_TRUE(first.is_new);
  EXPECT_TRUE(first.ended.empty()) << first.ended;
  t.reset();
  // Another connection (a 2026 client makes one per call) finds it by handle.
  PushOut("second\n");
  bool is_new = true;
  EXPECT_EQ(Cell({2, true, handle, "client"}, &is_new), "second\n");
  EXPECT_FALSE(is_new);
  EXPECT_EQ(sandbox_.launches(), 1) << "one interpreter for both cells";
  EXPECT_EQ(pool_->live(), 1);
}

TEST_F(SessionPoolTest, ANameIsItsConnectionsOwnSession) {
  Start();
  bool is_new = false;
  Cell({1, false, "work", "a"}, &is_new);
  EXPECT_TRUE(is_new);
  Cell({2, false, "work", "b"}, &is_new);
  EXPECT_TRUE(is_new) << "the same name on another connection is another session";
  Cell({1, false, "work", "a"}, &is_new);
  EXPECT_FALSE(is_new);
  EXPECT_EQ(sandbox_.launches(), 2);
  EXPECT_EQ(pool_->live(), 2);
}

TEST_F(SessionPoolTest, WithTheStatelessProtocolANameIsRefusedSayingToStartANewOne) {
  Start();
  const std::string error = Refusal({1, true, "work", "a"});
  EXPECT_TRUE(Has(error, "session \"work\" is not a session handle")) << error;
  EXPECT_TRUE(Has(error, "session: \"new\"")) << error;
  EXPECT_EQ(pool_->live(), 0);
}

TEST_F(SessionPoolTest, AHandleThisServerNeverMadeIsRefused) {
  Start();
  const std::string stranger = HandleBook().Mint();
  const std::string error = Refusal({1, true, stranger, "a"});
  EXPECT_TRUE(Has(error, "is not a live session of this server")) << error;
  EXPECT_EQ(sandbox_.launches(), 0);
}

TEST_F(SessionPoolTest, EndEndsTheSessionAndItsHandleIsThenRefusedSayingWhy) {
  Start();
  std::string handle;
  auto t = Take({1, true, SessionPool::kNew, "a"}, &handle);
  ASSERT_TRUE(t);
  SessionPool::CellOutcome out = Run(*t, false, /*end=*/true);
  ASSERT_TRUE(std::holds_alternative<RunOutcome>(out.result));
  EXPECT_TRUE(Has(out.ended, "the call asked for it (end: true)")) << out.ended;
  EXPECT_TRUE(Has(out.ended, "its handle is no longer valid")) << out.ended;
  t.reset();
  const std::string error = Refusal({1, true, handle, "a"});
  EXPECT_TRUE(Has(error, "has ended (the call asked for it (end: true))")) << error;
  EXPECT_EQ(pool_->live(), 0);
  EXPECT_GE(sandbox_.kills(), 1) << "the interpreter was ended";
}

TEST_F(SessionPoolTest, ResetStartsAFreshInterpreterUnderTheSameHandle) {
  Start();
  std::string handle;
  auto t = Take({1, true, SessionPool::kNew, "a"}, &handle);
  ASSERT_TRUE(t);
  Run(*t);
  t = Take({1, true, handle, "a"});
  ASSERT_TRUE(t);
  SessionPool::CellOutcome out = Run(*t, /*reset=*/true);
  ASSERT_TRUE(std::holds_alternative<RunOutcome>(out.result));
  EXPECT_TRUE(out.is_new);
  EXPECT_TRUE(out.ended.empty()) << out.ended;
  EXPECT_EQ(sandbox_.launches(), 2);
  t.reset();
  bool is_new = true;
  Cell({1, true, handle, "a"}, &is_new);
  EXPECT_FALSE(is_new) << "the handle holds the fresh interpreter";
}

TEST_F(SessionPoolTest, CallsToOneSessionRunInTheOrderTheyWereAccepted) {
  Start();
  std::string handle;
  std::vector<std::shared_ptr<SessionPool::Ticket>> tickets(3);
  tickets[0] = Take({1, true, SessionPool::kNew, "a"}, &handle);
  tickets[1] = Take({1, true, handle, "a"});
  tickets[2] = Take({1, true, handle, "a"});
  for (const auto& t : tickets) ASSERT_TRUE(t);
  PushOut("cell 1\n");
  PushOut("cell 2\n");
  PushOut("cell 3\n");
  std::vector<std::string> got(3);
  std::vector<std::thread> threads;
  // The last accepted starts waiting first: its turn still comes last.
  for (int i = 2; i >= 0; --i) {
    threads.emplace_back([&, i] {
      SessionPool::CellOutcome out = Run(*tickets[i]);
      if (auto* o = std::get_if<RunOutcome>(&out.result)) got[i] = o->stdout_data;
    });
    std::this_thread::sleep_for(20ms);
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(got[0], "cell 1\n");
  EXPECT_EQ(got[1], "cell 2\n");
  EXPECT_EQ(got[2], "cell 3\n");
  EXPECT_EQ(sandbox_.launches(), 1);
}

TEST_F(SessionPoolTest, ACallCancelledWhileItWaitsItsTurnLeavesWithoutRunning) {
  Start();
  std::string handle;
  auto first = Take({1, true, SessionPool::kNew, "a"}, &handle);
  auto second = Take({1, true, handle, "a"});
  ASSERT_TRUE(first && second);
  CancelToken cancel;
  SessionPool::CellOutcome waiting;
  std::thread th([&] { waiting = Run(*second, cancel); });
  std::this_thread::sleep_for(50ms);
  cancel.Cancel(CancelReason::kClient);
  th.join();
  ASSERT_TRUE(std::holds_alternative<std::string>(waiting.result));
  EXPECT_EQ(std::get<std::string>(waiting.result), "the call was cancelled before it started");
  second.reset();
  // The one ahead of it runs as if it had been alone.
  SessionPool::CellOutcome out = Run(*first);
  EXPECT_TRUE(std::holds_alternative<RunOutcome>(out.result));
  EXPECT_EQ(sandbox_.launches(), 1);
  EXPECT_EQ(scheduler_->queued() + scheduler_->running(), 0) << "every place was given back";
}

TEST_F(SessionPoolTest, AFullPoolEvictsTheIdlestSessionOfTheClientHoldingTheMost) {
  config_.max_py_sessions = 2;
  Start();
  std::string oldest, newer;
  auto t = Take({1, true, SessionPool::kNew, "greedy"}, &oldest);
  Run(*t);
  t = Take({1, true, SessionPool::kNew, "greedy"}, &newer);
  Run(*t);
  t.reset();
  // Another client asks: the greedy client's idlest session gives way.
  bool is_new = false;
  Cell({2, true, SessionPool::kNew, "modest"}, &is_new);
  EXPECT_TRUE(is_new);
  EXPECT_EQ(pool_->live(), 2);
  const std::string error = Refusal({1, true, oldest, "greedy"});
  EXPECT_TRUE(Has(error, "evicted")) << error;
  EXPECT_TRUE(Has(error, "MCP_EXEC_MAX_PY_SESSIONS")) << error;
  Cell({1, true, newer, "greedy"}, &is_new);
  EXPECT_FALSE(is_new) << "the newer one lives on";
}

TEST_F(SessionPoolTest, AFullPoolWhoseSessionsAreAllBusyRefusesSayingItsLimit) {
  config_.max_py_sessions = 1;
  Start();
  auto busy = Take({1, true, SessionPool::kNew, "a"});  // waiting its turn: never gives way
  ASSERT_TRUE(busy);
  bool full = false;
  const std::string error = Refusal({2, true, SessionPool::kNew, "b"}, &full);
  EXPECT_TRUE(full);
  EXPECT_TRUE(Has(error, "MCP_EXEC_MAX_PY_SESSIONS=1")) << error;
  EXPECT_TRUE(Has(error, "run without `session`")) << error;
  EXPECT_NE(metrics_.Render({}).find("mcp_exec_session_refusals_total{table=\"python\"} 1"),
            std::string::npos)
      << metrics_.Render({});
}

TEST_F(SessionPoolTest, AnEndedConnectionEndsItsNamedSessionsOnly) {
  Start();
  Cell({1, false, "mine", "a"});
  std::string handle;
  auto t = Take({1, true, SessionPool::kNew, "a"}, &handle);
  Run(*t);
  t.reset();
  EXPECT_EQ(pool_->live(), 2);
  pool_->EndConnection(1);
  EXPECT_EQ(pool_->live(), 1) << "a handle's session is not the connection's";
  bool is_new = false;
  Cell({1, false, "mine", "a"}, &is_new);
  EXPECT_TRUE(is_new) << "the name starts afresh";
  Cell({3, true, handle, "a"}, &is_new);
  EXPECT_FALSE(is_new);
}

TEST_F(SessionPoolTest, AnIdleSessionEndsAndItsHandleSaysWhy) {
  config_.py_session_idle_s = 1;
  Start();
  std::string handle;
  auto t = Take({1, true, SessionPool::kNew, "a"}, &handle);
  Run(*t);
  t.reset();
  ASSERT_TRUE(WaitLive(0)) << "the sweeper ends an idle session";
  const std::string error = Refusal({1, true, handle, "a"});
  EXPECT_TRUE(Has(error, "no call for 1 s (MCP_EXEC_PY_SESSION_IDLE_S)")) << error;
}

// A 2025 client's name starts afresh after its session ended: the call that
// starts it again says why (its NameError has a cause), once.
TEST_F(SessionPoolTest, ANamedSessionStartedAgainSaysWhyTheOneBeforeEnded) {
  config_.py_session_idle_s = 1;
  Start();
  Cell({1, false, "nb", "a"});
  ASSERT_TRUE(WaitLive(0)) << "the sweeper ends an idle session";
  auto t = Take({1, false, "nb", "a"});
  ASSERT_TRUE(t);
  SessionPool::CellOutcome again = Run(*t);
  EXPECT_TRUE(again.is_new);
  EXPECT_EQ(again.restarted, "no call for 1 s (MCP_EXEC_PY_SESSION_IDLE_S)");
  t = Take({1, false, "nb", "a"});
  ASSERT_TRUE(t);
  EXPECT_EQ(Run(*t).restarted, "") << "said once";
  // end: true, then the name again; reset is asked for, and says nothing.
  t = Take({1, false, "nb", "a"});
  Run(*t, /*reset=*/false, /*end=*/true);
  t = Take({1, false, "nb", "a"});
  EXPECT_EQ(Run(*t).restarted, "the call asked for it (end: true)");
  t = Take({1, false, "nb", "a"});
  SessionPool::CellOutcome reset = Run(*t, /*reset=*/true);
  EXPECT_TRUE(reset.is_new);
  EXPECT_EQ(reset.restarted, "");
  // A name on another connection is another session: nothing to say.
  bool is_new = false;
  Cell({2, false, "nb", "b"}, &is_new);
  EXPECT_TRUE(is_new);
}

TEST_F(SessionPoolTest, AnInterpreterLostInACellEndsItsSessionSayingSo) {
  Start();
  std::string handle;
  auto t = Take({1, true, SessionPool::kNew, "a"}, &handle);
  RunScript lost;
  lost.lose = true;
  sandbox_.Push(lost);
  SessionPool::CellOutcome out = Run(*t);
  EXPECT_FALSE(out.ended.empty());
  EXPECT_TRUE(Has(out.ended, "its handle is no longer valid")) << out.ended;
  t.reset();
  const std::string error = Refusal({1, true, handle, "a"});
  EXPECT_TRUE(Has(error, "has ended (its interpreter ended")) << error;
}

TEST_F(SessionPoolTest, ShutdownEndsEverySessionAndRefusesNewOnes) {
  Start();
  Cell({1, false, "one", "a"});
  Cell({1, true, SessionPool::kNew, "a"});
  EXPECT_EQ(pool_->live(), 2);
  pool_->Shutdown();
  EXPECT_EQ(pool_->live(), 0);
  EXPECT_EQ(Refusal({1, true, SessionPool::kNew, "a"}), "the server is shutting down");
  EXPECT_NE(metrics_.Render({}).find("mcp_exec_py_session_ends_total{reason=\"shutdown\"} 2"),
            std::string::npos)
      << metrics_.Render({});
}

}  // namespace
}  // namespace mcpexec
