#pragma once

#include <atomic>
#include <functional>
#include <mutex>

#include "base/unique_fd.h"

namespace mcpexec {

// Why a run is ended early.
enum class CancelReason : int {
  kClient = 0,    // notifications/cancelled or a client that left: no answer is sent
  kShutdown = 1,  // the server is stopping: the call is answered with its output so far
};

// Set by whoever wants a run ended early (a cancel, a disconnect, shutdown).
class CancelToken {
 public:
  CancelToken();
  // The first reason given wins.
  void Cancel(CancelReason why = CancelReason::kClient);
  bool cancelled() const { return cancelled_.load(); }
  CancelReason reason() const { return static_cast<CancelReason>(reason_.load()); }
  // Called (from Cancel's thread) when the token is cancelled, or at once if
  // it already is; nullptr removes it. Wakes a waiter that cannot poll fd().
  void OnCancel(std::function<void()> hook);
  int fd() const { return fd_.get(); }  // readable once cancelled

 private:
  std::atomic<bool> claimed_{false};  // the first Cancel's
  std::atomic<bool> cancelled_{false};
  std::atomic<int> reason_{0};
  std::mutex hook_mu_;
  std::function<void()> hook_;
  UniqueFd fd_;
};

}  // namespace mcpexec
