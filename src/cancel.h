#pragma once

#include <atomic>

namespace mcpexec {

// Set by whoever wants a run ended early (a cancel, a disconnect, shutdown).
class CancelToken {
 public:
  CancelToken();
  ~CancelToken();
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }
  int fd() const { return fd_; }  // readable once cancelled

 private:
  std::atomic<bool> cancelled_{false};
  int fd_;
};

}  // namespace mcpexec
