// One run from the supervisor's side: a slot from the scheduler, a private
// working directory, the pipes and the code memfd handed to the zygote, then
// the I/O loop that feeds stdin, reads both streams under one budget and
// enforces the deadline. The answer goes out as soon as the runner has
// reported and its pipes are closed; reaping and removing the directory
// happen afterwards, off the caller's path.
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
#include "tool/contract.h"
#include "base/metrics.h"
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
  std::variant<ExecResult, std::string> Run(const ExecRequest& req, CancelToken& cancel);

  // Gives back an admitted place without running (the run was refused).
  void Withdraw() { scheduler_.Withdraw(); }

  // Waits for every run's teardown, then removes the base folder.
  void Shutdown();

  const std::string& base_dir() const { return base_dir_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct RunIo;
  void PumpUntilEnded(RunIo& io, uint64_t run_id, Clock::time_point started_at);
  void FeedStdin(RunIo& io);
  std::optional<std::string> Settle(RunIo& io);
  void Report(uint64_t run_id, const ExecRequest& req, const ExecResult& result, bool failed);

  struct Cleanup {
    uint64_t run_id;
    std::shared_ptr<RunSlot> slot;
    std::string workdir;
  };
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
