// A SandboxLink for unit tests: it plays the runner on the very fds the
// executor hands it (stdout, stderr, the status pipe, stdin, the results
// pipe), following a script per run or cell, and tells the run's end on its
// RunSlot as the zygote does. No zygote, no fork, no CPython: the executor's
// deadlines, cancellation, output budget, verdict checks, sessions and
// failures are tested in milliseconds, deterministically.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "ipc/control.h"
#include "ipc/status.h"
#include "supervisor/sandbox_link.h"

namespace mcpexec::testing {

// What one run (or one session cell) does, in order: its lockdown verdict,
// what it reads and writes, then how it ends.
struct RunScript {
  enum class Verdict { kOk, kRefused, kNone };
  Verdict verdict = Verdict::kOk;
  std::string refusal = "seccomp: the filter could not be loaded";
  bool echo_stdin = false;  // reads stdin to its end and writes it to stdout first
  std::string out, err;
  size_t chunk = 0;  // writes the streams this many bytes at a time (0: at once)
  std::chrono::milliseconds chunk_delay{0};
  bool hang = false;           // then waits until killed (or, a cell, interrupted)
  bool obey_interrupt = true;  // a hanging cell ends on KeyboardInterrupt (status 1)
  bool confirm_kill = true;    // false: a kill is never confirmed (a stuck sandbox)
  bool lose = false;           // the sandbox dies mid-run: the run is lost
  std::string lost_reason = "the sandbox restarted (scripted)";
  bool refuse_launch = false;  // Launch / SendCell fail at once
  bool hold_pipes = false;     // stdout stays open after the exit until Release()
  int exit_code = 0;
  int signal = 0;                    // ended by this signal instead of exiting
  uint32_t note = ipc::kReasonNone;  // the runtime's RunNote (or a cell's reason)
  // The note carries the run's trace (its code "runs" 5 ms, 20 ms after the
  // hand-off), with these faults; forge_trace: it claims to have ended
  // before it began (a run's word, never believed out of order).
  bool trace = false;
  bool forge_trace = false;
  int64_t faults_before = 0, faults_during = 0;
  bool oom_killed = false;
  uint32_t ended_by = 0;  // ipc::kExited* flags of the zygote's own
  // Count() after this cell: the zygote ends the session for what it holds.
  bool count_ends_session = false;
};

class ScriptedSandbox : public SandboxLink {
 public:
  ScriptedSandbox() { signal(SIGPIPE, SIG_IGN); }
  ~ScriptedSandbox() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
      released_ = true;
      for (auto& [id, r] : runs_) r->killed = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // The scripts of the next runs and cells, in order (then the default).
  void Push(RunScript s) {
    std::lock_guard<std::mutex> lock(mu_);
    scripts_.push_back(std::move(s));
  }
  // Lets go of pipes held open (RunScript::hold_pipes).
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  int kills() const {
    std::lock_guard<std::mutex> lock(mu_);
    return kills_;
  }
  int interrupts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return interrupts_;
  }
  int launches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return launches_;
  }

  bool Launch(uint64_t run_id, const ipc::RunParams& params, const int* fds,
              std::shared_ptr<RunSlot> slot, std::string* error) override {
    RunScript s = Next();
    if (s.refuse_launch) return *error = "the sandbox is restarting (scripted)", false;
    auto run = std::make_shared<Run>();
    run->slot = std::move(slot);
    run->session = params.session_cpu_s > 0;
    std::lock_guard<std::mutex> lock(mu_);
    ++launches_;
    runs_[run_id] = run;
    threads_.emplace_back(&ScriptedSandbox::Play, this, run, s, Dup(fds), true);
    return true;
  }

  bool SendCell(uint64_t run_id, const ipc::RunParams&, const int* fds,
                std::string* error) override {
    RunScript s = Next();
    if (s.refuse_launch) return *error = "the sandbox is restarting (scripted)", false;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return *error = "no such session (scripted)", false;
    it->second->interrupted = false;
    threads_.emplace_back(&ScriptedSandbox::Play, this, it->second, s, Dup(fds), false);
    return true;
  }

  void Kill(uint64_t run_id) override {
    std::shared_ptr<Run> run;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++kills_;
      auto it = runs_.find(run_id);
      if (it == runs_.end()) return;
      run = it->second;
      run->killed = true;
    }
    cv_.notify_all();
    // A session's interpreter between cells ends at once.
    std::lock_guard<std::mutex> lock(mu_);
    if (run->session && !run->in_cell && run->confirm_kill) ReportEnd(*run, SIGKILL, 0);
  }

  void Interrupt(uint64_t run_id) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++interrupts_;
      auto it = runs_.find(run_id);
      if (it != runs_.end()) it->second->interrupted = true;
    }
    cv_.notify_all();
  }

  bool Count(uint64_t run_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return false;
    Run& run = *it->second;
    {
      std::lock_guard<std::mutex> slot_lock(run.slot->mu);
      run.slot->counted++;
      run.slot->count_ended = run.count_ends_session;
      run.slot->Notify();
    }
    if (run.count_ends_session) ReportEnd(run, SIGKILL, ipc::kExitedHeldProcesses);
    return true;
  }

  int64_t OomKills(const std::string&) const override { return 0; }

 private:
  struct Run {
    std::shared_ptr<RunSlot> slot;
    bool session = false;
    bool in_cell = false;
    bool killed = false;
    bool interrupted = false;
    bool ended = false;
    bool confirm_kill = true;
    bool count_ends_session = false;
  };
  using Fds = std::vector<std::shared_ptr<UniqueFd>>;

  RunScript Next() {
    std::lock_guard<std::mutex> lock(mu_);
    if (scripts_.empty()) return RunScript{};
    RunScript s = std::move(scripts_.front());
    scripts_.pop_front();
    return s;
  }
  // The runner's own copies: the executor closes its ends once handed over.
  static Fds Dup(const int* fds) {
    Fds out;
    for (int i = 0; i < ipc::kRunFdCount; ++i) {
      out.push_back(
          std::make_shared<UniqueFd>(fds[i] >= 0 ? fcntl(fds[i], F_DUPFD_CLOEXEC, 3) : -1));
    }
    return out;
  }
  // With mu_ held: the run is over, as the zygote's kExited tells it.
  static void ReportEnd(Run& run, int wait_status, uint32_t ended_by, bool oom = false) {
    if (run.ended) return;
    run.ended = true;
    std::lock_guard<std::mutex> lock(run.slot->mu);
    run.slot->exited = true;
    run.slot->MarkTornDown();  // kExited and kReaped at once: nothing scripted lingers
    run.slot->wait_status = wait_status;
    run.slot->ended_by = ended_by;
    run.slot->oom_killed = oom;
    run.slot->Notify();
  }
  // Writes all of `data` (unless killed meanwhile or the reader left).
  bool WriteAll(int fd, const std::string& data, const RunScript& s, Run& run) {
    size_t off = 0;
    while (off < data.size()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (run.killed) return false;
      }
      size_t n = s.chunk ? std::min(s.chunk, data.size() - off) : data.size() - off;
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      ssize_t w = write(fd, data.data() + off, n);
      if (w < 0 && errno == EAGAIN) continue;
      if (w <= 0) return false;
      off += static_cast<size_t>(w);
      if (s.chunk_delay.count() > 0) std::this_thread::sleep_for(s.chunk_delay);
    }
    return true;
  }
  static void WriteRecord(const std::shared_ptr<UniqueFd>& fd, const void* rec, size_t len) {
    if (fd->get() >= 0) (void)!write(fd->get(), rec, len);
  }

  void Play(std::shared_ptr<Run> run, RunScript s, Fds fds, bool launched) {
    for (int i : {ipc::kStdout, ipc::kStderr}) {
      if (fds[i]->get() >= 0) fcntl(fds[i]->get(), F_SETFL, O_NONBLOCK);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      run->in_cell = true;
      run->confirm_kill = s.confirm_kill;
      run->count_ends_session = s.count_ends_session;
    }
    if (launched) {
      std::lock_guard<std::mutex> lock(run->slot->mu);
      run->slot->Notify();
      if (s.verdict != RunScript::Verdict::kNone) {
        ipc::LockdownVerdict v{};
        v.magic = ipc::kVerdictMagic;
        v.ok = s.verdict == RunScript::Verdict::kOk ? 1 : 0;
        v.lockdown_us = 120;
        snprintf(v.error, sizeof v.error, "%s", v.ok ? "" : s.refusal.c_str());
        WriteRecord(fds[ipc::kStatus], &v, sizeof v);
      }
    }
    std::string out = s.out;
    if (s.echo_stdin && fds[ipc::kStdin]->get() >= 0) {
      std::string in;
      char buf[65536];
      ssize_t n;
      while ((n = read(fds[ipc::kStdin]->get(), buf, sizeof buf)) > 0) {
        in.append(buf, static_cast<size_t>(n));
      }
      out = in + out;
    }
    if (s.lose) {
      std::lock_guard<std::mutex> lock(run->slot->mu);
      run->slot->lost = true;
      run->slot->lost_reason = s.lost_reason;
      run->slot->Notify();
      return;
    }
    WriteAll(fds[ipc::kStdout]->get(), out, s, *run);
    WriteAll(fds[ipc::kStderr]->get(), s.err, s, *run);
    std::unique_lock<std::mutex> lock(mu_);
    if (s.hang) {
      cv_.wait(lock, [&] {
        return closing_ || run->killed || (run->session && run->interrupted && s.obey_interrupt);
      });
    }
    const bool killed = run->killed;
    if (killed && !s.confirm_kill) {
      // A stuck sandbox: the kill is never confirmed, the pipes close late.
      cv_.wait(lock, [&] { return closing_; });
      return;
    }
    if (run->session && !killed) {
      // A cell ends with its end record; its interpreter lives on.
      ipc::CellDone done{ipc::kCellDoneMagic, s.hang ? 1 : s.exit_code, s.note};
      WriteRecord(fds[ipc::kStatus], &done, sizeof done);
      run->in_cell = false;
      return;
    }
    if (!killed && (s.note != ipc::kReasonNone || s.trace)) {
      ipc::RunNote note{ipc::kNoteMagic, s.note, 0, 0, 0, 0};
      if (s.trace) {
        auto ns = [] {
          return std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now().time_since_epoch())
              .count();
        };
        // The "code" runs 20 ms, well after the executor saw the hand-off.
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        note.code_started_ns = ns();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        note.code_finished_ns = s.forge_trace ? note.code_started_ns - 1000 : ns();
        lock.lock();
        note.faults_before = s.faults_before;
        note.faults_during = s.faults_during;
      }
      WriteRecord(fds[ipc::kStatus], &note, sizeof note);
    }
    // The pipes close as the runner exits; a grandchild the run left may
    // hold stdout open after it (hold_pipes).
    for (int i = 0; i < ipc::kRunFdCount; ++i) {
      if (!(s.hold_pipes && i == ipc::kStdout)) fds[i]->Reset();
    }
    run->in_cell = false;
    ReportEnd(*run, killed ? SIGKILL : (s.signal ? s.signal : s.exit_code << 8), s.ended_by,
              s.oom_killed);
    if (s.hold_pipes) cv_.wait(lock, [&] { return released_; });
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RunScript> scripts_;
  std::map<uint64_t, std::shared_ptr<Run>> runs_;
  std::vector<std::thread> threads_;
  bool closing_ = false;
  bool released_ = false;
  int kills_ = 0, interrupts_ = 0, launches_ = 0;
};

}  // namespace mcpexec::testing
