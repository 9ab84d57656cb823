// One run from the supervisor's side, in named steps: acquire a slot from the
// scheduler, prepare a private working directory and the run's pipes and
// code memfd, hand them over to the zygote, pump I/O under the deadline
// (stdin fed, both streams read under one budget), settle the end from the
// trusted side, report. The answer goes out as soon as the runner has
// reported and its pipes are closed; removing the directory happens
// afterwards, off the caller's path.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>

#include "base/call_pool.h"
#include "base/cancel.h"
#include "base/log.h"
#include "base/metrics.h"
#include "model/config.h"
#include "model/tool_gateway.h"
#include "resources/store.h"
#include "supervisor/run.h"
#include "supervisor/sandbox_link.h"
#include "supervisor/scheduler.h"

namespace mcpexec {

// A session's interpreter as the executor keeps it between cells: the run
// that started it (its id, its slot with the zygote, its working directory).
// Owned by the session pool; one cell at a time.
struct SessionRun {
  int64_t cpu_budget_s = 0;  // the interpreter's CPU limit for its whole life
  uint64_t run_id = 0;
  std::shared_ptr<RunSlot> slot;  // null until the first cell started it
  std::string workdir;
  std::shared_ptr<void> active;  // its place in the /dev/shm purge's record
  int cells = 0;                 // cells run so far
  // Set when the interpreter is gone (or must go): why, in plain words.
  std::string ended;
  bool started() const { return slot != nullptr; }
};

class Executor {
 public:
  Executor(const Config& config, SandboxLink& zygote, Scheduler& scheduler, Metrics* metrics);
  ~Executor();

  // Creates the base folder for the runs' working directories.
  // shared_dev_shm: runs share the host's /dev/shm (no mount namespace), so
  // what they leave there is purged between runs.
  bool Init(bool shared_dev_shm, std::string* error);

  // Admission must have succeeded (Scheduler::Admit) before. Blocks until the
  // run is over. Returns the result, or a tool-error message.
  // progress, when set, is called about once a second while the run goes
  // with the seconds elapsed and its newest output lines.
  using Progress = std::function<void(double seconds, const std::string& newest_output)>;
  std::variant<RunOutcome, std::string> Run(const RunRequest& req, CancelToken& cancel,
                                            const Progress& progress = nullptr);

  // One cell in a session: starts its interpreter on the first (a run that
  // stays alive), else hands the cell to it. A timeout or a cancellation
  // interrupts the cell (KeyboardInterrupt) and the interpreter lives on,
  // unless the cell ignores it for interrupt_grace; then the interpreter is
  // killed. When the interpreter is gone after the cell, session.ended says
  // why (the caller then calls EndSession).
  std::variant<RunOutcome, std::string> RunCell(SessionRun& session, const RunRequest& req,
                                                CancelToken& cancel, const Progress& progress,
                                                std::chrono::milliseconds interrupt_grace);
  // Kills the session's interpreter, if any, and removes its directory off
  // the caller's path.
  void EndSession(SessionRun& session);

  // Gives back an admitted place without running (the run was refused).
  void Withdraw() { scheduler_.Withdraw(); }

  // Waits for every run's teardown, then removes the base folder.
  void Shutdown();

  // Code mode: the upstreams runs may call through their tool channel
  // (null: none; the channel is closed at once), served on `pool`'s threads
  // (which outlive every run). Set before serving.
  void SetToolGateway(std::shared_ptr<ToolGateway> gateway, CallPool& pool) {
    tools_ = std::move(gateway);
    tool_pool_ = &pool;
  }
  bool has_tools() const { return tools_ != nullptr; }

  // What runs left for resources/read; null when MCP_EXEC_RESOURCE_STORE_MB
  // is 0 (or before Init).
  ResourceStore* resources() const { return resources_.get(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct RunFds;
  struct Stream;
  struct RunIo;
  class Workdir;
  class ActiveRun;
  struct Launch;
  // Why the supervisor stopped a run, if it did (the first cause holds).
  enum class StopCause { kNone, kTimeout, kCancelled, kShutdown };
  // The one sequence of Run() and RunCell() (session null for a run), and
  // its steps in order.
  std::variant<RunOutcome, std::string> Execute(SessionRun* session, const RunRequest& req,
                                                CancelToken& cancel, const Progress& progress,
                                                std::chrono::milliseconds interrupt_grace);
  std::optional<Failed> AcquireSlot(CancelToken& cancel);
  std::optional<std::string> Prepare(SessionRun* session, const RunRequest& req, Launch& l);
  std::optional<std::string> PrepareWorkdir(Workdir* workdir);
  std::optional<Failed> Hand(SessionRun* session, const RunRequest& req, Launch& l);
  void PumpUntilEnded(RunIo& io);
  // A session's cell that ended: the zygote counts what the sessions hold
  // before the answer; io.reaped is set when that count ended the session.
  void CountAfterCell(RunIo& io);
  // The verdict the runner wrote before any code ran: a tool error unless it
  // says every layer holds (then its costs go into the outcome).
  std::optional<Failed> CheckVerdict(RunIo& io, const char* what);
  std::optional<Failed> Settle(RunIo& io);
  static RunEnd ClassifyEnd(StopCause cause, int exit_code, int signal, uint8_t note,
                            bool memory_killed, bool held_processes = false);
  // Why the zygote ended a run (or a session's interpreter) that held the
  // most processes while all runs together held more than their share.
  std::string RunsHeldText() const;
  std::string WhyInterpreterEnded(const RunIo& io) const;
  // The run's metric, and its log line's fields: its outcome, or why it
  // failed. Report writes the line at once; a one-shot run's goes out once
  // the run is torn down (the cleaner), with that phase in its trace.
  nlohmann::json Record(uint64_t run_id, const RunRequest& req, const RunOutcome& outcome,
                        const Failed* failed, int cell);
  void Report(uint64_t run_id, const RunRequest& req, const RunOutcome& outcome,
              const Failed* failed = nullptr, int cell = 0) {
    log::Info("run", Record(run_id, req, outcome, failed, cell));
  }
  // The trace's phases the executor saw (from the call's arrival).
  static void Trace(const RunIo& io, Clock::time_point received, Clock::time_point handed,
                    RunTrace* trace);
  // Reports a tool error (with what the run got, if anything) and returns
  // its message.
  std::string Fail(uint64_t run_id, const RunRequest& req, const Failed& f,
                   const RunOutcome& o = RunOutcome{}, int cell = 0);
  // Within the pump.
  void FeedStdin(RunIo& io);
  void Drain(RunIo& io, int fd, Stream& s);
  void OnSlotChanged(RunIo& io);
  void OnDeadline(RunIo& io, Clock::time_point now);
  void ReportProgress(RunIo& io);

  struct Cleanup {
    uint64_t run_id;
    std::shared_ptr<RunSlot> slot;
    std::string workdir;
    bool wait_for_end = false;  // killed just now (a session's interpreter)
    // A one-shot run's log line, written once the run is torn down (or at
    // once, if its end never came), and when its call arrived.
    nlohmann::json line = nullptr;
    Clock::time_point received{};
  };
  void WriteRunLine(Cleanup& c);
  void QueueCleanup(Cleanup c);
  void CleanerLoop();
  // Waits until every queued cleanup is done, at most `timeout` (the
  // resource store's reclaim: an ended run's folder gives its room back).
  void WaitCleanups(std::chrono::milliseconds timeout);
  void PurgeDevShm();

  const Config& config_;
  SandboxLink& zygote_;
  Scheduler& scheduler_;
  Metrics* metrics_;
  std::string base_dir_;
  UniqueFd base_hold_;  // base_dir_/.lock, held while the server lives
  std::unique_ptr<ResourceStore> resources_;
  bool shared_dev_shm_ = false;
  // Start times of the runs that are executing, for the /dev/shm purge.
  std::multiset<int64_t> active_starts_;
  std::atomic<uint64_t> next_run_id_{1};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Cleanup> cleanups_;
  bool cleaning_ = false;  // the cleaner is removing one (under mu_)
  std::condition_variable cleaned_cv_;
  bool stopping_ = false;
  std::thread cleaner_;
  std::shared_ptr<ToolGateway> tools_;
  CallPool* tool_pool_ = nullptr;
};

}  // namespace mcpexec
