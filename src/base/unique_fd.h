// The one owner of a file descriptor: closes it when it goes out of scope,
// moves but never copies, and hands it over explicitly (Release) when another
// process or owner takes it. Every fd the server owns is held in one.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <utility>

namespace mcpexec {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }

  // Closes what it held and takes `fd` (default: nothing).
  void Reset(int fd = -1) {
    if (fd_ >= 0 && fd_ != fd) close(fd_);
    fd_ = fd;
  }
  // Gives the fd up without closing it.
  [[nodiscard]] int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

// pipe2(flags) into two owners; false (errno set) if the kernel refuses.
inline bool MakePipe(UniqueFd* read_end, UniqueFd* write_end, int flags) {
  int p[2];
  if (pipe2(p, flags) != 0) return false;
  read_end->Reset(p[0]);
  write_end->Reset(p[1]);
  return true;
}

// socketpair(AF_UNIX, type) into two owners; false (errno set) if refused.
inline bool MakeSocketPair(int type, UniqueFd* a, UniqueFd* b) {
  int sv[2];
  if (socketpair(AF_UNIX, type, 0, sv) != 0) return false;
  a->Reset(sv[0]);
  b->Reset(sv[1]);
  return true;
}

}  // namespace mcpexec
