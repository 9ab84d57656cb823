#include "supervisor/session_handles.h"

#include <regex>
#include <utility>

#include "base/random.h"

namespace mcpexec {

HandleBook::HandleBook(std::string prefix) : prefix_(std::move(prefix)) {}

std::string HandleBook::Mint() {
  return (prefix_.empty() ? "" : prefix_ + ".") + "py-" + RandomToken(18);
}

bool HandleBook::LooksLikeHandle(const std::string& name) {
  static const std::regex kShape("^([A-Za-z0-9-]{1,24}\\.)?py-[A-Za-z0-9_-]{24}$");
  return std::regex_match(name, kShape);
}

void HandleBook::Ended(const std::string& handle, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!gone_.emplace(handle, why).second) return;
  gone_order_.push_back(handle);
  while (gone_order_.size() > kRemembered) {
    gone_.erase(gone_order_.front());
    gone_order_.pop_front();
  }
}

std::optional<std::string> HandleBook::WhyGone(const std::string& handle) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = gone_.find(handle);
  if (it == gone_.end()) return std::nullopt;
  return it->second;
}

}  // namespace mcpexec
