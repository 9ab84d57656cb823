#include "ipc/control.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace mcpexec::ipc {

constexpr int kMaxFds = 8;

bool Send(int sock, const Header& h, const void* payload, size_t len, const int* fds, int nfds) {
  std::string buf(sizeof h + len, '\0');
  memcpy(buf.data(), &h, sizeof h);
  if (len) memcpy(buf.data() + sizeof h, payload, len);
  iovec iov{buf.data(), buf.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  if (nfds > 0) {
    if (nfds > kMaxFds) {
      errno = EINVAL;
      return false;
    }
    memset(control, 0, sizeof control);
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  for (;;) {
    ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n >= 0) return static_cast<size_t>(n) == buf.size();
    if (errno != EINTR) return false;
  }
}

namespace {

int ReceiveWith(int sock, int flags, Header* h, std::string* payload, std::vector<UniqueFd>* fds) {
  // One buffer per thread, made once: every run's messages pass here (the
  // zygote's run requests, the inits' reports), and 256 KiB zeroed per
  // message would be paid on the request's path.
  thread_local std::string buf(sizeof(Header) + kMaxPayload, '\0');
  iovec iov{buf.data(), buf.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -1;
  if (fds) fds->clear();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      int got[kMaxFds];
      memcpy(got, CMSG_DATA(c), sizeof(int) * count);
      for (size_t i = 0; i < count; ++i) {
        UniqueFd fd(got[i]);
        if (fds) fds->push_back(std::move(fd));
      }
    }
  }
  if (n == 0) {
    // EOF, or an empty message: whatever fds came with it are closed.
    if (fds) fds->clear();
    return 0;
  }
  if (static_cast<size_t>(n) < sizeof(Header) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    if (fds) fds->clear();
    errno = EPROTO;
    return -1;
  }
  memcpy(h, buf.data(), sizeof(Header));
  if (payload) payload->assign(buf.data() + sizeof(Header), n - sizeof(Header));
  return 1;
}

}  // namespace

int Receive(int sock, Header* h, std::string* payload, std::vector<UniqueFd>* fds) {
  return ReceiveWith(sock, 0, h, payload, fds);
}

int ReceiveNow(int sock, Header* h, std::string* payload, std::vector<UniqueFd>* fds) {
  return ReceiveWith(sock, MSG_DONTWAIT, h, payload, fds);
}

}  // namespace mcpexec::ipc
