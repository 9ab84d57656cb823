// The I/O of one launched run (internal to the executor): its fds, its
// output streams under the shared budget, and RunIo, the state of the
// run from its handover to its end, with the pump that moves it
// (run_io.cc: stdin fed, output read, the status and results pipes, the
// deadline, cancellation and the zygote's word on the run).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "base/unique_fd.h"
#include "base/utf8.h"
#include "ipc/control.h"
#include "ipc/status.h"
#include "supervisor/executor.h"
#include "supervisor/results.h"
#include "supervisor/status_reader.h"
#include "supervisor/tool_channel.h"

namespace mcpexec {

// How often a call that asked for progress hears of its run.
constexpr auto kProgressEvery = std::chrono::seconds(1);
// After a kill, the zygote confirms the end within this; after the exit, the
// pipes close as soon as what the run left behind is killed.
constexpr auto kKillGrace = std::chrono::seconds(5);
constexpr auto kPipeGrace = std::chrono::seconds(2);

// A duration in whole milliseconds, as results and logs state them.
inline int64_t Millis(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// The fds of one run: the supervisor's ends and the runner's (handed to the
// zygote, then closed here).
struct Executor::RunFds {
  UniqueFd in_r, in_w, out_r, out_w, err_r, err_w, st_r, st_w, res_r, res_w, code;
  UniqueFd tools, tools_run;  // the tool channel: ours, and the run's end

  bool Make(const RunRequest& req);
  // The runner's copies, in ipc::RunFd order.
  std::array<int, ipc::kRunFdCount> RunnerEnds() const {
    std::array<int, ipc::kRunFdCount> ends{};
    ends[ipc::kStdin] = in_r.get();
    ends[ipc::kStdout] = out_w.get();
    ends[ipc::kStderr] = err_w.get();
    ends[ipc::kStatus] = st_w.get();
    ends[ipc::kCode] = code.get();
    ends[ipc::kResults] = res_w.get();
    ends[ipc::kTools] = tools_run.get();
    return ends;
  }
  // The runner holds its own copies now; ours would keep the pipes open.
  void CloseRunnerEnds() {
    for (UniqueFd* fd : {&in_r, &out_w, &err_w, &st_w, &res_w, &code, &tools_run}) fd->Reset();
  }
};

// One output stream: what is kept under the shared budget, and the last
// bytes of all it carried (for the tail of a stream that lost bytes).
struct Executor::Stream {
  explicit Stream(std::string* into) : kept(into) {}
  std::string* kept;
  bool open = true;
  bool lost = false;
  std::string last;  // at most 2 x tail_bytes while the run goes
  // Once it lost bytes: the whole stream, into the resource store.
  std::unique_ptr<ResourceStore::Writer> whole;
  std::string not_kept;  // why the whole stream is not in the store
};

// The I/O of one launched run, until its runner is reaped and its output
// pipes are closed: stdin fed, both streams read under one budget, the
// status pipe read up to its bound, the deadline and cancellation enforced.
// Its state is a phase (what the supervisor has done to the run), a cause
// (why, if the supervisor stopped it) and how it ended (reaped, a cell's end
// record, or no result at all).
struct Executor::RunIo {
  // What the supervisor has done to the run, in order; a one-shot run goes
  // from kRunning to kKilling, a session's cell through kInterrupting.
  enum class Phase {
    kRunning,       // its code runs
    kInterrupting,  // a cell was sent KeyboardInterrupt: killed unless it ends within the grace
    kKilling,       // the zygote was told to kill it, and confirms within kKillGrace
  };
  // The zygote's word on a run it reaped.
  struct Reaped {
    int wait_status = 0;
    bool oom_killed = false;  // its memory cgroup killed
    uint32_t ended_by = 0;    // the zygote's session bound, if it ended the run
  };

  RunIo(uint64_t id, const RunRequest& r, CancelToken& c, RunSlot& sl, RunFds& f, RunOutcome& o,
        Clock::time_point start, const Config& config, const Progress& p, ResourceStore* store)
      : run_id(id),
        req(r),
        cancel(c),
        slot(sl),
        fds(f),
        outcome(o),
        started_at(start),
        budget(config.max_output_bytes),
        tail_bytes(config.tail_bytes),
        results(ResultLimitsFor(config), store),
        resources(store),
        whole_limit(config.disk_limit_mb << 20),
        out(&o.stdout_data),
        err(&o.stderr_data),
        progress(p),
        next_progress(start + kProgressEvery) {}
  const uint64_t run_id;
  const RunRequest& req;
  CancelToken& cancel;
  RunSlot& slot;
  RunFds& fds;  // the status and results pipes are reset when read to their end
  RunOutcome& outcome;
  const Clock::time_point started_at;
  int64_t budget;
  int64_t tail_bytes;
  ResultsReader results;
  ResourceStore* resources;  // null: streams are not kept whole
  int64_t whole_limit;       // the most of one stream kept whole
  Stream out, err;
  const Progress& progress;
  Clock::time_point next_progress{};
  std::string recent{};  // the newest output of either stream, for progress
  StatusReader status{};
  size_t stdin_off = 0;

  Phase phase = Phase::kRunning;
  StopCause cause = StopCause::kNone;  // why the supervisor stopped it
  bool interrupt_ignored = false;      // a cell killed for not stopping within the grace
  Clock::time_point interrupt_deadline{}, kill_deadline{}, pipe_deadline{};
  // How it ended: reaped, a cell's end record (its interpreter lives on), or
  // no result (the sandbox lost it, or never confirmed its kill).
  std::optional<Reaped> reaped;
  std::optional<ipc::CellDone> cell_end;
  std::optional<Failed> failed;
  // For the trace: when the pipes were read to their end, and when the
  // sandbox's word on the end came.
  Clock::time_point drained_at{}, status_at{};
  void StampDrained() {
    if (drained_at == Clock::time_point{} && !out.open && !err.open && !fds.res_r) {
      drained_at = Clock::now();
    }
  }

  // A session's cell: it ends with its CellDone record, and a deadline or a
  // cancellation interrupts it first.
  SessionRun* session = nullptr;
  // Code mode: the run's tool channel, one more descriptor of the loop
  // (PumpUntilEnded); null without upstreams.
  ToolChannel* tools = nullptr;
  std::chrono::milliseconds interrupt_grace{0};
  int64_t oom_base = 0;  // the session cgroup's memory kills before this cell

  void Kill(SandboxLink& zygote) {
    if (phase == Phase::kKilling) return;
    phase = Phase::kKilling;
    zygote.Kill(run_id);
    kill_deadline = Clock::now() + kKillGrace;
  }
  // The supervisor ends the run for `why`: a one-shot run is killed; a
  // session's cell gets KeyboardInterrupt, and is killed only if it has not
  // ended within the grace; the server's shutdown kills either.
  void Stop(SandboxLink& zygote, StopCause why) {
    if (cause == StopCause::kNone) cause = why;
    if (!session || why == StopCause::kShutdown) return Kill(zygote);
    if (phase != Phase::kRunning) return;
    phase = Phase::kInterrupting;
    zygote.Interrupt(run_id);
    interrupt_deadline = Clock::now() + interrupt_grace;
  }
  bool ended() const {
    if (failed || (session && cell_end)) return true;
    return reaped && !out.open && !err.open && !fds.res_r;
  }
  // What the pipes brought, into the outcome: the tail of a stream that lost
  // bytes to the budget, and the checked results.
  void CollectOutput() {
    const auto tail = static_cast<size_t>(tail_bytes);
    outcome.stdout_lost = out.lost;
    outcome.stderr_lost = err.lost;
    if (out.lost) outcome.stdout_tail = std::string(Utf8Tail(out.last, tail));
    if (err.lost) outcome.stderr_tail = std::string(Utf8Tail(err.last, tail));
    Keep(out, "stdout.txt", &outcome.stdout_uri, &outcome.stdout_size);
    Keep(err, "stderr.txt", &outcome.stderr_uri, &outcome.stderr_size);
    outcome.stdout_not_kept = out.not_kept;
    outcome.stderr_not_kept = err.not_kept;
    results.Finish(&outcome);
  }
  // The whole of a stream that lost bytes, published in the store.
  void Keep(Stream& s, const char* name, std::string* uri, int64_t* size) {
    if (!s.lost) return;
    if (!resources) {
      s.not_kept = "MCP_EXEC_RESOURCE_STORE_MB is 0: no stream is kept whole";
      return;
    }
    if (!s.whole) {
      if (s.not_kept.empty()) s.not_kept = "the resource store could not make a file for it";
      return;
    }
    if (auto kept = resources->Commit(*s.whole, name, "text/plain")) {
      *uri = *kept;
      *size = s.whole->size();
    } else {
      s.not_kept = "the resource store could not keep it whole: " + s.whole->why();
    }
    s.whole.reset();
  }
  // Where the status pipe's end record of a session cell starts.
  size_t done_offset() const {
    return session && session->cells == 0 ? sizeof(ipc::LockdownVerdict) : 0;
  }
  // A session's cell ends with its end record, once it is in the status pipe.
  void ReadCellEnd() {
    ipc::CellDone done{};
    if (session && !cell_end && status.cell_done(done_offset(), &done)) cell_end = done;
  }
};

}  // namespace mcpexec
