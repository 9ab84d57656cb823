// The supervisor's end of the zygote: spawns it (the server's own binary in
// zygote mode, with an explicit environment), waits for its warm-up report,
// routes its messages to the runs that wait for them, and restarts it when it
// dies. The runs that were in flight then learn that they were lost.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/config.h"
#include "base/unique_fd.h"
#include "process/wire.h"
#include "process/zygote_args.h"
#include "sandbox/cgroups.h"
#include "supervisor/run.h"

namespace mcpexec {

// What the zygote has told us about one run. Guarded by its own mutex; the
// run's I/O loop is woken through an eventfd on every change.
struct RunSlot {
  // A slot with its eventfd; nullptr (errno set) if the kernel refuses one.
  static std::shared_ptr<RunSlot> Make();
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  pid_t pid = 0;
  std::string cgroup;  // the run's cgroup's name, "" without the cgroup layer
  bool exited = false;
  int wait_status = 0;
  bool oom_killed = false;  // the run's cgroup killed something for memory
  uint32_t ended_by = 0;    // wire::kExitedByZygote's flags
  // A session's counts after its cells (wire::kCount): how many the zygote
  // answered, and whether the latest ended the session.
  uint64_t counted = 0;
  bool count_ended = false;
  bool lost = false;  // the zygote died or refused the run
  std::string lost_reason;
  RunFailure lost_cause = RunFailure::kSandboxLost;
  // With mu held: wakes the run's I/O loop.
  void Notify();
  // The eventfd to poll. Open until CloseWake(), which only the run's own
  // cleanup calls, after its I/O loop is over.
  int wake_fd() const { return wake_.get(); }
  // Closes the eventfd under mu: a late message from the zygote then wakes
  // nobody.
  void CloseWake();

 private:
  UniqueFd wake_;  // guarded by mu
};

class ZygoteClient {
 public:
  explicit ZygoteClient(const Config& config);
  ~ZygoteClient();

  // Spawns the zygote and waits for its report. Call before any other thread
  // of the server exists.
  bool Start(std::string* error);
  // Waits (bounded) until a zygote is ready; false if it cannot be had.
  bool WaitReady(int timeout_ms);
  // Waits (bounded) until a zygote other than the one of `generation` is
  // ready; false on timeout or shutdown.
  bool WaitNextZygote(uint64_t generation, int timeout_ms);
  // Sends a run; fds are the runner's ends (the caller closes its copies).
  bool Launch(uint64_t run_id, const wire::RunParams& params, const int* fds,
              std::shared_ptr<RunSlot> slot, std::string* error);
  void Kill(uint64_t run_id);
  // A session's next cell, to the interpreter the run run_id started (fds:
  // the cell's runner ends, as for Launch). False if the sandbox cannot be
  // reached; a session that is gone reports its end on its slot instead.
  bool SendCell(uint64_t run_id, const wire::RunParams& params, const int* fds, std::string* error);
  // SIGINT to a session's interpreter (KeyboardInterrupt in its cell).
  void Interrupt(uint64_t run_id);
  // A session's cell ended: the zygote counts what the sessions hold now and
  // answers on the run's slot (counted, count_ended). False if the sandbox
  // cannot be reached.
  bool Count(uint64_t run_id);
  // The kernel's count of memory kills in a run's cgroup so far (0 without
  // the memory controller).
  int64_t OomKills(const std::string& cgroup) const;
  // Closes the control socket (the zygote then kills every runner and exits)
  // and reaps it.
  void Shutdown();

  RuntimeReport report() const;
  pid_t zygote_pid() const;
  // The zygote has a mount namespace of its own: runs get private /tmp and
  // /dev/shm.
  bool private_mounts() const;
  int64_t restarts() const { return restarts_.load(); }

 private:
  // Spawns a zygote and waits for its report, with fewer namespaces each
  // time the host refuses them. Used by Start() and by every restart.
  bool SpawnAndAwait(std::string* error);
  bool SpawnLocked(std::string* error);
  ZygoteArgs ArgsFor(int ns_flags) const;
  // 1 ready, 0 failed, -1 the namespaces could not be finished (try fewer).
  int AwaitReadyMessage(std::string* error);
  void KillZygote();
  // The reader thread: routes the zygote's messages to their runs; when the
  // zygote dies, reaps it, fails its runs and starts another.
  void ReaderLoop();
  void Dispatch(const wire::Header& h, const std::string& payload);
  // False when the zygote ended because the server is shutting down.
  bool BuryZygote();
  void Restart();
  void FailAllRuns(const std::string& reason, RunFailure cause);
  // One message to the zygote (under send_mu_); false with errno set. It
  // goes through the socket it found, which its reference keeps open: a
  // zygote that dies meanwhile is buried, and a restart makes new sockets,
  // without the number being closed or reused under the send.
  bool SendControl(const wire::Header& h, const void* payload, size_t len, const int* fds,
                   int nfds);
  // A reference to the control socket (nullptr between zygotes).
  std::shared_ptr<const UniqueFd> Control() const;

  const Config& config_;
  mutable std::mutex mu_;
  std::condition_variable ready_cv_;
  // The control socket. Shared: whoever sends or reads holds a reference,
  // so burying a zygote drops ours and the descriptor closes with the last.
  std::shared_ptr<const UniqueFd> control_;
  pid_t pid_ = 0;
  bool ready_ = false;
  uint64_t generation_ = 0;  // zygotes that became ready so far
  bool shutting_down_ = false;
  RuntimeReport report_;
  std::map<uint64_t, std::shared_ptr<RunSlot>> runs_;
  std::thread reader_;
  std::atomic<int64_t> restarts_{0};
  size_t ns_attempt_ = 0;  // index into namespaces::FlagSets() that works here
                           // (only the thread that spawns touches it)
  int ns_flags_ = 0;
  sandbox::cgroups::Delegation cgroups_;  // found once, before the first spawn
  bool cgroups_detected_ = false;
  std::mutex send_mu_;
};

// The environment every zygote (and so every runner) starts with: nothing of
// the server's, only what the runtime needs.
std::vector<std::string> ZygoteEnvironment(const Config& config, const std::string& cache_dir);

}  // namespace mcpexec
