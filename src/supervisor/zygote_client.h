// The supervisor's end of the zygote: spawns it (the server's own binary in
// zygote mode, with an explicit environment), waits for its warm-up report,
// routes its messages to the runs that wait for them, and restarts it when it
// dies. The runs that were in flight then learn that they were lost.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/unique_fd.h"
#include "ipc/control.h"
#include "ipc/zygote_args.h"
#include "model/config.h"
#include "sandbox/cgroups.h"
#include "supervisor/run.h"
#include "supervisor/sandbox_link.h"

namespace mcpexec {

class ZygoteClient : public SandboxLink {
 public:
  explicit ZygoteClient(const Config& config);
  ~ZygoteClient() override;

  // Spawns the zygote and waits for its report. Call before any other thread
  // of the server exists.
  bool Start(std::string* error);
  // Start() in two steps, so the server can answer what needs no sandbox
  // while the zygote warms up: Spawn() before any other thread exists, then
  // FinishStart() (on any thread) waits for the report.
  bool Spawn(std::string* error);
  bool FinishStart(std::string* error);
  // The server stops before its first zygote is warm: that zygote is killed
  // (FinishStart then fails at once) rather than waited for. Does nothing
  // once a zygote was ready.
  void AbortStart();
  // Whether the zygote now running was spawned by the calling thread (it
  // dies with that thread: PR_SET_PDEATHSIG).
  bool SpawnedOnThisThread() const;
  // Waits (bounded) until a zygote is ready; false if it cannot be had.
  bool WaitReady(int timeout_ms);
  // Waits (bounded) until a zygote other than the one of `generation` is
  // ready; false on timeout or shutdown.
  bool WaitNextZygote(uint64_t generation, int timeout_ms);
  // Sends a run; fds are the runner's ends (the caller closes its copies).
  bool Launch(uint64_t run_id, const ipc::RunParams& params, const int* fds,
              std::shared_ptr<RunSlot> slot, std::string* error) override;
  void Kill(uint64_t run_id) override;
  // A session's next cell, to the interpreter the run run_id started (fds:
  // the cell's runner ends, as for Launch). False if the sandbox cannot be
  // reached; a session that is gone reports its end on its slot instead.
  bool SendCell(uint64_t run_id, const ipc::RunParams& params, const int* fds,
                std::string* error) override;
  // SIGINT to a session's interpreter (KeyboardInterrupt in its cell).
  void Interrupt(uint64_t run_id) override;
  // A session's cell ended: the zygote counts what the sessions hold now and
  // answers on the run's slot (counted, count_ended). False if the sandbox
  // cannot be reached.
  bool Count(uint64_t run_id) override;
  // The kernel's count of memory kills in a run's cgroup so far (0 without
  // the memory controller).
  int64_t OomKills(const std::string& cgroup) const override;
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
  // spawned: a zygote was already spawned (Spawn()): await it first.
  bool SpawnAndAwait(std::string* error, bool spawned = false);
  bool SpawnLocked(std::string* error);
  ZygoteArgs ArgsFor(int ns_flags) const;
  // 1 ready, 0 failed, -1 the namespaces could not be finished (try fewer).
  int AwaitReadyMessage(std::string* error);
  std::chrono::steady_clock::time_point spawned_at_{};
  bool start_aborted_ = false;  // AbortStart() came before a zygote was ready
  std::thread::id spawner_;     // the thread that spawned the zygote now running
  void KillZygote();
  // The reader thread: routes the zygote's messages to their runs; when the
  // zygote dies, reaps it, fails its runs and starts another.
  void ReaderLoop();
  void Dispatch(const ipc::Header& h, const std::string& payload);
  // False when the zygote ended because the server is shutting down.
  bool BuryZygote();
  void Restart();
  void FailAllRuns(const std::string& reason, RunFailure cause);
  // One message to the zygote (under send_mu_); false with errno set. It
  // goes through the socket it found, which its reference keeps open: a
  // zygote that dies meanwhile is buried, and a restart makes new sockets,
  // without the number being closed or reused under the send.
  bool SendControl(const ipc::Header& h, const void* payload, size_t len, const int* fds, int nfds);
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
