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

#include "base/cancel.h"
#include "base/config.h"
#include "base/metrics.h"
#include "supervisor/run.h"
#include "supervisor/scheduler.h"
#include "supervisor/zygote_client.h"

namespace mcpexec {

class Executor {
 public:
  Executor(const Config& config, ZygoteClient& zygote, Scheduler& scheduler, Metrics* metrics);
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

  // Gives back an admitted place without running (the run was refused).
  void Withdraw() { scheduler_.Withdraw(); }

  // Waits for every run's teardown, then removes the base folder.
  void Shutdown();

  const std::string& base_dir() const { return base_dir_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct RunFds;
  struct Stream;
  struct RunIo;
  class Workdir;
  class ActiveRun;
  // The steps of Run(), in order.
  std::optional<std::string> AcquireSlot(CancelToken& cancel);
  std::optional<std::string> PrepareWorkdir(Workdir* workdir);
  std::optional<std::string> Handover(uint64_t run_id, const RunRequest& req,
                                      const std::string& workdir, RunFds& fds,
                                      const std::shared_ptr<RunSlot>& slot);
  void PumpUntilEnded(RunIo& io);
  std::optional<std::string> Settle(RunIo& io);
  void Report(uint64_t run_id, const RunRequest& req, const RunOutcome& outcome, bool failed);
  // Within the pump.
  void FeedStdin(RunIo& io);
  void Drain(RunIo& io, int fd, Stream& s);
  void OnSlotChanged(RunIo& io);
  void ReportProgress(RunIo& io);

  struct Cleanup {
    uint64_t run_id;
    std::shared_ptr<RunSlot> slot;
    std::string workdir;
  };
  void QueueCleanup(Cleanup c);
  void CleanerLoop();
  void PurgeDevShm();

  const Config& config_;
  ZygoteClient& zygote_;
  Scheduler& scheduler_;
  Metrics* metrics_;
  std::string base_dir_;
  bool shared_dev_shm_ = false;
  // Start times of the runs that are executing, for the /dev/shm purge.
  std::multiset<int64_t> active_starts_;
  std::atomic<uint64_t> next_run_id_{1};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Cleanup> cleanups_;
  bool stopping_ = false;
  std::thread cleaner_;
};

}  // namespace mcpexec
