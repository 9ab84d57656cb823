// Python session handles (MCP 2026-07-28, "stateful tools"): the server
// mints them, a caller passes one back to run in that session's
// interpreter. A handle is a bearer capability: never reused (144 random
// bits), never logged. The book remembers the handles it ended (a bounded
// number) so that a call with one hears why it is gone.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace mcpexec {

class HandleBook {
 public:
  // The handles an ended session leaves a word for, oldest forgotten first.
  static constexpr size_t kRemembered = 4096;

  // prefix: empty, or what routes a handle to its server ([A-Za-z0-9-],
  // at most 24), written before a dot.
  explicit HandleBook(std::string prefix = std::string());

  // A new handle: [prefix.]py-{24 of A-Z a-z 0-9 _ -}: 144 random bits,
  // so that two are never alike (a birthday collision needs about 2^72
  // handles), without a record of every handle that grows with them.
  std::string Mint();
  // Whether `name` has the shape of a handle (any prefix), minted or not.
  // Such names are not session names a caller may choose.
  static bool LooksLikeHandle(const std::string& name);

  // The handle's session ended, for `why` (plain words).
  void Ended(const std::string& handle, const std::string& why);
  // Why a handle's session ended, if it is one this book minted and still
  // remembers.
  std::optional<std::string> WhyGone(const std::string& handle) const;

 private:
  const std::string prefix_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> gone_;
  std::deque<std::string> gone_order_;
};

}  // namespace mcpexec
