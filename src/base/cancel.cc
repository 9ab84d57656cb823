#include "base/cancel.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace mcpexec {

CancelToken::CancelToken() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void CancelToken::Cancel(CancelReason why) {
  // The reason is in place before anyone can see the token cancelled: a
  // reader of a shutdown's cancel must not take it for a client's.
  if (claimed_.exchange(true)) return;
  reason_ = static_cast<int>(why);
  cancelled_ = true;
  uint64_t one = 1;
  (void)!write(fd_.get(), &one, sizeof one);
  std::lock_guard<std::mutex> lock(hook_mu_);
  if (hook_) hook_();
}

void CancelToken::OnCancel(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(hook_mu_);
  hook_ = std::move(hook);
  if (hook_ && cancelled_) hook_();
}

}  // namespace mcpexec
