// The status pipe, read by the supervisor: the lockdown verdict a runner
// writes before any of the caller's code runs, the runtime's note after it,
// and a session cell's end record. What is read comes from a process that
// may be running anything: at most kStatusReadMax bytes are ever kept, and a
// record counts only with its magic.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ipc/status.h"

namespace mcpexec {

// What the status pipe said: at most kStatusReadMax bytes are ever kept.
class StatusReader {
 public:
  // Reads what is there; false once nothing more will be read (EOF, or the
  // bound is reached: the caller closes the pipe).
  bool Read(int fd) {
    for (;;) {
      ssize_t n = read(fd, buf_ + len_, sizeof buf_ - len_);
      if (n > 0) {
        len_ += static_cast<size_t>(n);
        if (len_ == sizeof buf_) return false;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n < 0 && errno == EAGAIN;
    }
  }
  // The verdict, if the first record is a well-formed one.
  const ipc::LockdownVerdict* verdict() {
    if (len_ < sizeof verdict_) return nullptr;
    memcpy(&verdict_, buf_, sizeof verdict_);
    if (verdict_.magic != ipc::kVerdictMagic) return nullptr;
    verdict_.error[sizeof verdict_.error - 1] = '\0';
    return &verdict_;
  }
  // A session cell's end record at offset (after the verdict on a session's
  // first cell, else first), once all of it is there.
  bool cell_done(size_t offset, ipc::CellDone* done) const {
    if (len_ < offset + sizeof *done) return false;
    memcpy(done, buf_ + offset, sizeof *done);
    return done->magic == ipc::kCellDoneMagic;
  }
  // The runtime's note after the verdict, if any.
  uint32_t note() const {
    ipc::RunNote n{};
    if (len_ < sizeof(ipc::LockdownVerdict) + sizeof n) return ipc::kReasonNone;
    memcpy(&n, buf_ + sizeof(ipc::LockdownVerdict), sizeof n);
    return n.magic == ipc::kNoteMagic ? n.reason : ipc::kReasonNone;
  }
  // The run's word on its phases (the note's trace), taken only in order:
  // its code started at or after `after_ns` and finished by `before_ns`
  // (CLOCK_MONOTONIC), its faults counted from 0. False without one.
  bool trace(int64_t after_ns, int64_t before_ns, ipc::RunNote* n) const {
    if (len_ < sizeof(ipc::LockdownVerdict) + sizeof *n) return false;
    memcpy(n, buf_ + sizeof(ipc::LockdownVerdict), sizeof *n);
    if (n->magic != ipc::kNoteMagic || n->code_started_ns < after_ns ||
        n->code_finished_ns < n->code_started_ns || n->code_finished_ns > before_ns) {
      return false;
    }
    if (n->faults_before < 0) n->faults_before = 0;
    if (n->faults_during < 0) n->faults_during = 0;
    return true;
  }

 private:
  char buf_[ipc::kStatusReadMax];
  size_t len_ = 0;
  ipc::LockdownVerdict verdict_{};
};

}  // namespace mcpexec
