// The executor against a scripted sandbox (scripted_sandbox.h): how a run's
// end, output, deadline, cancellation and failures come out, and a session's
// cells, without a zygote or CPython. Each test makes its own folder for the
// runs' working directories and removes it.
#include "supervisor/executor.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <atomic>
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

namespace mcpexec {
namespace {

using testing::RunScript;
using testing::ScriptedSandbox;
using namespace std::chrono_literals;

class ExecutorTest : public testing::ScriptedExecutorTest {
 protected:
  ExecutorTest() : ScriptedExecutorTest("executor") {}
  void SetUp() override {
    ScriptedExecutorTest::SetUp();
    config_.tail_bytes = 64;
    config_.max_concurrent = 2;
  }
  Executor& Start() { return StartExecutor(); }
  static RunRequest Req(int64_t timeout_s = 10, std::string stdin_data = "") {
    RunRequest r;
    r.code = "print('scripted')";
    r.stdin_data = std::move(stdin_data);
    r.timeout_s = timeout_s;
    return r;
  }
  // A run that must give an outcome.
  RunOutcome Outcome(const RunRequest& req, CancelToken& cancel) {
    EXPECT_TRUE(scheduler_->Admit());
    auto r = executor_->Run(req, cancel);
    if (auto* error = std::get_if<std::string>(&r)) {
      ADD_FAILURE() << "tool error: " << *error;
      return {};
    }
    return std::get<RunOutcome>(r);
  }
  RunOutcome Outcome(const RunRequest& req) {
    CancelToken cancel;
    return Outcome(req, cancel);
  }
  // A run that must give a tool error.
  std::string ToolError(const RunRequest& req) {
    CancelToken cancel;
    EXPECT_TRUE(scheduler_->Admit());
    auto r = executor_->Run(req, cancel);
    if (std::holds_alternative<RunOutcome>(r)) {
      ADD_FAILURE() << "an outcome where a tool error was due";
      return "";
    }
    return std::get<std::string>(r);
  }
  std::variant<RunOutcome, std::string> Cell(SessionRun& s, const RunRequest& req,
                                             CancelToken& cancel,
                                             std::chrono::milliseconds grace = 300ms) {
    EXPECT_TRUE(scheduler_->Admit());
    return executor_->RunCell(s, req, cancel, nullptr, grace);
  }
};

TEST_F(ExecutorTest, BothStreamsAndTheExitCodeComeBack) {
  Start();
  RunScript s;
  s.out = "hello\n";
  s.err = "a warning\n";
  s.exit_code = 3;
  sandbox_.Push(s);
  RunOutcome o = Outcome(Req());
  EXPECT_EQ(o.stdout_data, "hello\n");
  EXPECT_EQ(o.stderr_data, "a warning\n");
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_EQ(o.signal, 0);
  EXPECT_EQ(o.end, RunEnd::kExited);
  EXPECT_FALSE(o.truncated);
  EXPECT_EQ(o.lockdown_us, 120);
  EXPECT_EQ(sandbox_.kills(), 0);
}

// The run's trace (issue 39): each phase's end from the call's arrival, in
// the order a run goes through them; the runner's own word on its code's
// start and end and its faults, taken as it says when it is in order.
TEST_F(ExecutorTest, TheTraceFollowsTheRunsPhasesInOrder) {
  Start();
  RunScript s;
  s.out = "1\n";
  s.trace = true;
  s.faults_before = 800;
  s.faults_during = 300;
  sandbox_.Push(s);
  RunOutcome o = Outcome(Req());
  const RunTrace& t = o.trace;
  EXPECT_GE(t.handed_us, 0);
  EXPECT_GE(t.code_started_us, t.handed_us + 20000);  // the script's code starts 20 ms in
  EXPECT_GE(t.code_finished_us, t.code_started_us + 5000);
  EXPECT_GE(t.drained_us, t.code_finished_us);
  EXPECT_GE(t.status_known_us, t.handed_us);
  EXPECT_GE(t.answered_us, std::max(t.drained_us, t.status_known_us));
  EXPECT_EQ(t.torn_down_us, -1);  // known later: the run's log line has it
  EXPECT_EQ(t.faults_before, 800);
  EXPECT_EQ(t.faults_during, 300);
}

TEST_F(ExecutorTest, ATraceOutOfOrderIsNotBelieved) {
  Start();
  RunScript s;
  s.trace = true;
  s.forge_trace = true;  // "finished" before it "started"
  s.faults_during = 5;
  sandbox_.Push(s);
  RunOutcome o = Outcome(Req());
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_GE(o.trace.handed_us, 0);
  EXPECT_GE(o.trace.drained_us, 0);
  EXPECT_EQ(o.trace.code_started_us, -1);
  EXPECT_EQ(o.trace.code_finished_us, -1);
  EXPECT_EQ(o.trace.faults_during, -1);
}

TEST_F(ExecutorTest, ASignalEndsTheRunWithExitMinusOne) {
  Start();
  RunScript s;
  s.out = "before the crash\n";
  s.signal = SIGSEGV;
  sandbox_.Push(s);
  RunOutcome o = Outcome(Req());
  EXPECT_EQ(o.signal, SIGSEGV);
  EXPECT_EQ(o.exit_code, -1);
  EXPECT_EQ(o.end, RunEnd::kSignal);
  EXPECT_EQ(o.stdout_data, "before the crash\n");
}

TEST_F(ExecutorTest, TheKernelsSignalsHaveTheirOwnReasons) {
  Start();
  for (auto [sig, end] : {std::pair{SIGXCPU, RunEnd::kCpu}, std::pair{SIGXFSZ, RunEnd::kFileSize},
                          std::pair{SIGSYS, RunEnd::kSeccomp}}) {
    RunScript s;
    s.signal = sig;
    sandbox_.Push(s);
    EXPECT_EQ(Outcome(Req()).end, end) << sig;
  }
}

TEST_F(ExecutorTest, TheDeadlineKillsAHangingRunAndKeepsItsOutput) {
  Start();
  RunScript s;
  s.out = "started\n";
  s.hang = true;
  sandbox_.Push(s);
  RunOutcome o = Outcome(Req(1));
  EXPECT_EQ(o.end, RunEnd::kTimeout);
  EXPECT_EQ(o.exit_code, -1);
  EXPECT_EQ(o.stdout_data, "started\n");
  EXPECT_GE(o.duration_ms, 1000);
  EXPECT_EQ(sandbox_.kills(), 1);
}

TEST_F(ExecutorTest, ACancellationKillsTheRun) {
  Start();
  RunScript s;
  s.hang = true;
  sandbox_.Push(s);
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(100ms);
    cancel.Cancel();
  });
  RunOutcome o = Outcome(Req(30), cancel);
  canceller.join();
  EXPECT_EQ(o.end, RunEnd::kCancelled);
  EXPECT_EQ(o.exit_code, -1);
  EXPECT_LT(o.duration_ms, 30000);
}

TEST_F(ExecutorTest, TheServersShutdownEndsTheRunAsShutdown) {
  Start();
  RunScript s;
  s.out = "so far\n";
  s.hang = true;
  sandbox_.Push(s);
  CancelToken cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    cancel.Cancel(CancelReason::kShutdown);
  });
  RunOutcome o = Outcome(Req(30), cancel);
  stopper.join();
  EXPECT_EQ(o.end, RunEnd::kShutdown);
  EXPECT_EQ(o.stdout_data, "so far\n");
}

TEST_F(ExecutorTest, ACancelledCallInTheQueueLeavesWithoutRunning) {
  config_.max_concurrent = 1;
  Start();
  RunScript hang;
  hang.hang = true;
  sandbox_.Push(hang);
  CancelToken first;
  std::thread running([&] { Outcome(Req(30), first); });
  while (sandbox_.launches() == 0) std::this_thread::sleep_for(5ms);
  CancelToken second;
  second.Cancel();
  ASSERT_TRUE(scheduler_->Admit());
  auto r = executor_->Run(Req(), second);
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_NE(std::get<std::string>(r).find("cancel"), std::string::npos) << std::get<std::string>(r);
  EXPECT_EQ(sandbox_.launches(), 1);
  first.Cancel();
  running.join();
}

TEST_F(ExecutorTest, ARefusedLockdownIsAToolErrorNamingTheLayer) {
  Start();
  RunScript s;
  s.verdict = RunScript::Verdict::kRefused;
  s.refusal = "landlock: the ruleset could not be applied";
  s.out = "must not be shown";
  sandbox_.Push(s);
  std::string error = ToolError(Req());
  EXPECT_NE(error.find("landlock: the ruleset could not be applied"), std::string::npos) << error;
}

TEST_F(ExecutorTest, ARunWithoutAVerdictIsNotAResult) {
  Start();
  RunScript s;
  s.verdict = RunScript::Verdict::kNone;
  s.exit_code = 0;
  sandbox_.Push(s);
  std::string error = ToolError(Req());
  EXPECT_FALSE(error.empty());
}

TEST_F(ExecutorTest, ASandboxThatRefusesTheRunIsAToolError) {
  Start();
  RunScript s;
  s.refuse_launch = true;
  sandbox_.Push(s);
  std::string error = ToolError(Req());
  EXPECT_NE(error.find("the sandbox is restarting (scripted)"), std::string::npos) << error;
}

TEST_F(ExecutorTest, ARunTheSandboxLostSaysWhy) {
  Start();
  RunScript s;
  s.out = "half an answer";
  s.lose = true;
  s.lost_reason = "the sandbox died (scripted) and was started again";
  sandbox_.Push(s);
  std::string error = ToolError(Req());
  EXPECT_NE(error.find("the sandbox died (scripted)"), std::string::npos) << error;
}

TEST_F(ExecutorTest, AKillNeverConfirmedIsAToolErrorAfterItsGrace) {
  Start();
  RunScript s;
  s.hang = true;
  s.confirm_kill = false;
  sandbox_.Push(s);
  std::string error = ToolError(Req(1));
  EXPECT_NE(error.find("did not confirm the end"), std::string::npos) << error;
}

TEST_F(ExecutorTest, OutputPastTheBudgetIsCutAndItsTailKept) {
  config_.max_output_bytes = 1000;
  Start();
  RunScript s;
  for (int i = 0; i < 300; ++i) s.out += "line " + std::to_string(i) + "\n";
  sandbox_.Push(s);
  RunOutcome o = Outcome(Req());
  EXPECT_TRUE(o.truncated);
  EXPECT_TRUE(o.stdout_lost);
  EXPECT_LE(o.stdout_data.size(), 1000u);
  EXPECT_EQ(o.stdout_data, s.out.substr(0, o.stdout_data.size()));
  EXPECT_EQ(o.output_bytes, static_cast<int64_t>(s.out.size()));
  ASSERT_FALSE(o.stdout_tail.empty());
  EXPECT_LE(o.stdout_tail.size(), 64u);
  EXPECT_EQ(s.out.substr(s.out.size() - o.stdout_tail.size()), o.stdout_tail);
  EXPECT_EQ(o.stdout_not_kept, "MCP_EXEC_RESOURCE_STORE_MB is 0: no stream is kept whole");
}

TEST_F(ExecutorTest, BothStreamsShareOneBudget) {
  config_.max_output_bytes = 1000;
  Start();
  RunScript s;
  s.out = std::string(800, 'o');
  s.err = std::string(800, 'e');
  sandbox_.Push(s);
  RunOutcome o = Outcome(Req());
  EXPECT_TRUE(o.truncated);
  EXPECT_LE(o.stdout_data.size() + o.stderr_data.size(), 1000u);
  EXPECT_EQ(o.output_bytes, 1600);
}

TEST_F(ExecutorTest, AStreamPastTheBudgetIsKeptWholeInTheStore) {
  config_.max_output_bytes = 1000;
  config_.resource_store_mb = 16;
  Start();
  RunScript s;
  s.out = std::string(5000, 'x');
  sandbox_.Push(s);
  RunOutcome o = Outcome(Req());
  EXPECT_TRUE(o.stdout_lost);
  EXPECT_FALSE(o.stdout_uri.empty());
  EXPECT_EQ(o.stdout_size, 5000);
  EXPECT_TRUE(o.stdout_not_kept.empty()) << o.stdout_not_kept;
}

TEST_F(ExecutorTest, ASlowWriterIsReadToItsEndInOrder) {
  Start();
  RunScript s;
  for (int i = 0; i < 40; ++i) s.out += std::to_string(i) + ",";
  s.chunk = 7;
  s.chunk_delay = 5ms;
  sandbox_.Push(s);
  EXPECT_EQ(Outcome(Req()).stdout_data, s.out);
}

TEST_F(ExecutorTest, StdinLargerThanAPipeIsFedWhole) {
  Start();
  RunScript s;
  s.echo_stdin = true;
  s.out = "|end";
  sandbox_.Push(s);
  std::string in;
  for (int i = 0; in.size() < 300000; ++i) in += std::to_string(i) + "\n";
  EXPECT_EQ(Outcome(Req(10, in)).stdout_data, in + "|end");
}

TEST_F(ExecutorTest, AMemoryNoteCountsOnlyWithExitOne) {
  Start();
  RunScript memory;
  memory.note = ipc::kReasonMemory;
  memory.exit_code = 1;
  sandbox_.Push(memory);
  EXPECT_EQ(Outcome(Req()).end, RunEnd::kMemory);
  // The note is the runtime's word, believed only with the exit status it
  // implies: code that exits 0 after writing one is not ended for memory.
  RunScript forged = memory;
  forged.exit_code = 0;
  sandbox_.Push(forged);
  EXPECT_EQ(Outcome(Req()).end, RunEnd::kExited);
  RunScript file_size;
  file_size.note = ipc::kReasonFileSize;
  file_size.exit_code = 1;
  sandbox_.Push(file_size);
  EXPECT_EQ(Outcome(Req()).end, RunEnd::kFileSize);
}

TEST_F(ExecutorTest, TheCgroupsMemoryKillIsMemory) {
  Start();
  RunScript s;
  s.signal = SIGKILL;
  s.oom_killed = true;
  sandbox_.Push(s);
  RunOutcome o = Outcome(Req());
  EXPECT_EQ(o.end, RunEnd::kMemory);
  EXPECT_EQ(o.signal, SIGKILL);
}

TEST_F(ExecutorTest, ARunTheZygoteEndedForItsProcessesSaysSo) {
  Start();
  RunScript s;
  s.signal = SIGKILL;
  s.ended_by = ipc::kExitedRunsHeldProcesses;
  sandbox_.Push(s);
  EXPECT_EQ(Outcome(Req()).end, RunEnd::kProcesses);
}

// The zygote's watch and the run's own end race: a run that exited by
// itself before the kill keeps its exit code and its end (the image's fork
// bomb once came back as reason "processes" with exit_code 0).
TEST_F(ExecutorTest, ARunThatExitedBeforeTheZygotesKillKeepsItsOwnEnd) {
  Start();
  RunScript s;
  s.out = "stopped after 53 children: Resource temporarily unavailable\n";
  s.exit_code = 0;
  s.ended_by = ipc::kExitedRunsHeldProcesses;
  sandbox_.Push(s);
  RunOutcome o = Outcome(Req());
  EXPECT_EQ(o.end, RunEnd::kExited);
  EXPECT_EQ(o.exit_code, 0);
}

TEST_F(ExecutorTest, PipesALeftoverHoldsDoNotHoldTheAnswer) {
  Start();
  RunScript s;
  s.out = "done\n";
  s.hold_pipes = true;
  sandbox_.Push(s);
  RunOutcome o = Outcome(Req());  // answered while the double still holds stdout
  EXPECT_EQ(o.stdout_data, "done\n");
  EXPECT_EQ(o.end, RunEnd::kExited);
  sandbox_.Release();
}

TEST_F(ExecutorTest, ProgressHearsTheNewestOutputWhileTheRunGoes) {
  Start();
  RunScript s;
  s.out = "step 1 of 3\n";
  s.hang = true;
  sandbox_.Push(s);
  std::atomic<int> calls{0};
  std::string newest;
  std::mutex mu;
  CancelToken cancel;
  ASSERT_TRUE(scheduler_->Admit());
  auto r = executor_->Run(Req(2), cancel, [&](double, const std::string& output) {
    std::lock_guard<std::mutex> lock(mu);
    ++calls;
    newest = output;
  });
  ASSERT_TRUE(std::holds_alternative<RunOutcome>(r));
  EXPECT_GE(calls.load(), 1);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_NE(newest.find("step 1 of 3"), std::string::npos) << newest;
}

TEST_F(ExecutorTest, ASessionKeepsItsInterpreterBetweenCells) {
  Start();
  RunScript first;
  first.out = "x = 1\n";
  sandbox_.Push(first);
  RunScript second;
  second.out = "2\n";
  second.exit_code = 0;
  sandbox_.Push(second);
  SessionRun session;
  session.cpu_budget_s = 60;
  CancelToken cancel;
  auto r1 = Cell(session, Req(), cancel);
  ASSERT_TRUE(std::holds_alternative<RunOutcome>(r1)) << std::get<std::string>(r1);
  EXPECT_EQ(std::get<RunOutcome>(r1).stdout_data, "x = 1\n");
  EXPECT_TRUE(session.ended.empty()) << session.ended;
  auto r2 = Cell(session, Req(), cancel);
  ASSERT_TRUE(std::holds_alternative<RunOutcome>(r2)) << std::get<std::string>(r2);
  EXPECT_EQ(std::get<RunOutcome>(r2).stdout_data, "2\n");
  EXPECT_EQ(session.cells, 2);
  EXPECT_EQ(sandbox_.launches(), 1);  // one interpreter
  executor_->EndSession(session);
}

TEST_F(ExecutorTest, ACellPastItsDeadlineIsInterruptedAndTheSessionLives) {
  Start();
  sandbox_.Push(RunScript{});
  RunScript slow;
  slow.hang = true;  // ends on KeyboardInterrupt
  sandbox_.Push(slow);
  SessionRun session;
  session.cpu_budget_s = 60;
  CancelToken cancel;
  ASSERT_TRUE(std::holds_alternative<RunOutcome>(Cell(session, Req(), cancel)));
  auto r = Cell(session, Req(1), cancel);
  ASSERT_TRUE(std::holds_alternative<RunOutcome>(r)) << std::get<std::string>(r);
  EXPECT_EQ(std::get<RunOutcome>(r).end, RunEnd::kTimeout);
  EXPECT_EQ(sandbox_.interrupts(), 1);
  EXPECT_EQ(sandbox_.kills(), 0);
  EXPECT_TRUE(session.ended.empty()) << session.ended;
  executor_->EndSession(session);
}

TEST_F(ExecutorTest, ACellThatIgnoresTheInterruptLosesItsInterpreter) {
  Start();
  sandbox_.Push(RunScript{});
  RunScript stubborn;
  stubborn.hang = true;
  stubborn.obey_interrupt = false;
  sandbox_.Push(stubborn);
  SessionRun session;
  session.cpu_budget_s = 60;
  CancelToken cancel;
  ASSERT_TRUE(std::holds_alternative<RunOutcome>(Cell(session, Req(), cancel)));
  auto r = Cell(session, Req(1), cancel, 200ms);
  ASSERT_TRUE(std::holds_alternative<RunOutcome>(r)) << std::get<std::string>(r);
  EXPECT_EQ(std::get<RunOutcome>(r).end, RunEnd::kTimeout);
  EXPECT_EQ(sandbox_.kills(), 1);
  EXPECT_NE(session.ended.find("did not stop within 200 ms of KeyboardInterrupt"),
            std::string::npos)
      << session.ended;
}

TEST_F(ExecutorTest, TheCountAfterACellCanEndTheSessionAndSaysWhy) {
  config_.max_processes = 48;
  Start();
  RunScript greedy;
  greedy.out = "forked 40 sleepers\n";
  greedy.count_ends_session = true;
  sandbox_.Push(greedy);
  SessionRun session;
  session.cpu_budget_s = 60;
  CancelToken cancel;
  auto r = Cell(session, Req(), cancel);
  ASSERT_TRUE(std::holds_alternative<RunOutcome>(r)) << std::get<std::string>(r);
  EXPECT_EQ(std::get<RunOutcome>(r).stdout_data, "forked 40 sleepers\n");
  EXPECT_NE(session.ended.find("half of MCP_EXEC_MAX_PROCESSES (24"), std::string::npos)
      << session.ended;
}

TEST_F(ExecutorTest, EveryOutcomeAndFailureIsCounted) {
  Start();
  RunScript ok;
  sandbox_.Push(ok);
  Outcome(Req());
  RunScript refused;
  refused.refuse_launch = true;
  sandbox_.Push(refused);
  ToolError(Req());
  const std::string text = metrics_.Render(Metrics::Gauges{});
  EXPECT_NE(text.find("sandbox_unavailable"), std::string::npos) << text;
}

}  // namespace
}  // namespace mcpexec
