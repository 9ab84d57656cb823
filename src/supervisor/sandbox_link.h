// The executor's view of the sandbox: where a run is launched, a session's
// cell sent, a run killed or interrupted, and where each run's end is told
// (its RunSlot). The server's is the zygote (ZygoteClient); the unit tests'
// is a scripted double that plays the runner on the same fds
// (tests/unit/scripted_sandbox.h), so the executor's timeouts, cancellation,
// output budget and failures are tested without forking CPython.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/unique_fd.h"
#include "ipc/control.h"
#include "supervisor/run.h"

namespace mcpexec {

// What the zygote has told us about one run. Guarded by its own mutex; the
// run's I/O loop is woken through an eventfd on every change.
struct RunSlot {
  // A slot with its eventfd; nullptr (errno set) if the kernel refuses one.
  static std::shared_ptr<RunSlot> Make();
  std::mutex mu;
  std::condition_variable cv;
  std::string cgroup;  // the run's cgroup's name, "" without the cgroup layer
  bool exited = false;
  // Every process of the run reaped (ipc::kReaped), or the zygote that held
  // an exited run gone; when, for the run's trace.
  bool torn_down = false;
  std::chrono::steady_clock::time_point torn_down_at{};
  int wait_status = 0;
  bool oom_killed = false;  // the run's cgroup killed something for memory
  uint32_t ended_by = 0;    // ipc::kExitedByZygote's flags
  // A session's counts after its cells (ipc::kCount): how many the zygote
  // answered, and whether the latest ended the session.
  uint64_t counted = 0;
  bool count_ended = false;
  bool lost = false;  // the zygote died or refused the run
  std::string lost_reason;
  RunFailure lost_cause = RunFailure::kSandboxLost;
  // With mu held: wakes the run's I/O loop.
  void Notify();
  // With mu held: every process of the run is reaped, now (the caller
  // notifies).
  void MarkTornDown() {
    torn_down = true;
    torn_down_at = std::chrono::steady_clock::now();
  }
  // The eventfd to poll. Open until CloseWake(), which only the run's own
  // cleanup calls, after its I/O loop is over.
  int wake_fd() const { return wake_.get(); }
  // Closes the eventfd under mu: a late message from the zygote then wakes
  // nobody.
  void CloseWake();

 private:
  UniqueFd wake_;  // guarded by mu
};

class SandboxLink {
 public:
  virtual ~SandboxLink() = default;
  // Sends a run; fds are the runner's ends in ipc::RunFd order (the caller
  // closes its copies). Its start and end are told on `slot`.
  virtual bool Launch(uint64_t run_id, const ipc::RunParams& params, const int* fds,
                      std::shared_ptr<RunSlot> slot, std::string* error) = 0;
  // A session's next cell, to the interpreter the run run_id started.
  virtual bool SendCell(uint64_t run_id, const ipc::RunParams& params, const int* fds,
                        std::string* error) = 0;
  virtual void Kill(uint64_t run_id) = 0;
  // KeyboardInterrupt in a session's cell.
  virtual void Interrupt(uint64_t run_id) = 0;
  // What the sessions hold, counted after a cell; answered on the run's slot.
  virtual bool Count(uint64_t run_id) = 0;
  // Memory kills in a run's cgroup so far (0 without the memory controller).
  virtual int64_t OomKills(const std::string& cgroup) const = 0;
};

}  // namespace mcpexec
