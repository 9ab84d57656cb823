// Supervisor -> zygote: what the zygote decodes. The first byte picks the
// surface, the rest is its bytes:
//   0: a run bundle (the code memfd: code and input files), decoded by
//      ipc::DecodeRunBundle; decoded, it must encode back to the same bytes;
//   1: one control message (kRun, kCell, kKill, ...) on a real SOCK_SEQPACKET
//      socketpair, with as many fds as bits 2-5 of the first byte say
//      (past kMaxFds: truncated), received by ipc::Receive and ReceiveNow;
//      it must hand back the header and payload as sent and never keep an fd
//      it was not asked for;
//   2: the zygote's command line (NUL-separated arguments after argv[0] and
//      "__zygote"), parsed by ZygoteArgs::Parse; parsed, it must write back
//      (ToArgv) to arguments that parse to the same values.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "ipc/control.h"
#include "ipc/run_bundle.h"
#include "ipc/zygote_args.h"

namespace {

using mcpexec::UniqueFd;
namespace ipc = mcpexec::ipc;

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz_wire_request: %s\n", what);
  abort();
}

int g_null = -1;  // /dev/null, the fd every message carries copies of

// The lowest free fd: it grows when a test leaks one.
int LowestFreeFd() {
  int fd = dup(g_null);
  if (fd < 0) abort();
  close(fd);
  return fd;
}

void Bundle(const std::string& in) {
  std::string code;
  std::vector<std::pair<std::string, std::string>> files;
  if (!ipc::DecodeRunBundle(in, &code, &files)) return;
  if (ipc::EncodeRunBundle(code, files) != in) Fail("a decoded bundle encodes differently");
}

// Sends in as one datagram with nfds copies of /dev/null, as a peer could.
void SendRaw(int sock, const std::string& in, int nfds) {
  iovec iov{const_cast<char*>(in.data()), in.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 16)];
  if (nfds > 0) {
    memset(control, 0, sizeof control);
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::vector<int> fds(static_cast<size_t>(nfds), g_null);
    memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  if (sendmsg(sock, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(in.size())) Fail("sendmsg");
}

void Control(const std::string& in, unsigned mode) {
  const int nfds = static_cast<int>((mode >> 2) & 15);
  const bool keep_fds = (mode & 0x40) != 0, now = (mode & 0x80) != 0;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) Fail("socketpair");
  UniqueFd a(sv[0]), b(sv[1]);
  const int before = LowestFreeFd();
  SendRaw(a.get(), in, nfds);
  ipc::Header h{};
  std::string payload;
  std::vector<UniqueFd> fds;
  int r = now ? ipc::ReceiveNow(b.get(), &h, &payload, keep_fds ? &fds : nullptr)
              : ipc::Receive(b.get(), &h, &payload, keep_fds ? &fds : nullptr);
  if (in.empty()) {
    if (r != 0) Fail("an empty datagram is not EOF");
  } else if (in.size() < sizeof(ipc::Header)) {
    if (r != -1 || errno != EPROTO || !fds.empty()) Fail("a short message was taken");
  } else if (nfds > 8) {
    if (r != -1 || !fds.empty()) Fail("a message with too many fds was taken");
  } else {
    if (r != 1) Fail("a well-formed message was refused");
    if (memcmp(&h, in.data(), sizeof h) != 0) Fail("the header differs");
    if (payload != in.substr(sizeof h)) Fail("the payload differs");
    if (keep_fds && fds.size() != static_cast<size_t>(nfds)) Fail("fds lost");
    for (const UniqueFd& fd : fds) {
      if ((fcntl(fd.get(), F_GETFD) & FD_CLOEXEC) == 0) Fail("a received fd is not CLOEXEC");
    }
  }
  fds.clear();
  if (LowestFreeFd() != before) Fail("an fd leaked");
  // And what ipc::Send makes of the header and payload, received again.
  if (in.size() >= sizeof(ipc::Header) && in.size() - sizeof h <= ipc::kMaxPayload) {
    memcpy(&h, in.data(), sizeof h);
    const std::string sent = in.substr(sizeof h);
    int fd_list[8];
    for (int& fd : fd_list) fd = g_null;
    const int n = nfds > 8 ? 8 : nfds;
    if (!ipc::Send(a.get(), h, sent.data(), sent.size(), fd_list, n)) Fail("Send");
    ipc::Header got{};
    if (ipc::Receive(b.get(), &got, &payload, &fds) != 1 || memcmp(&got, &h, sizeof h) != 0 ||
        payload != sent || fds.size() != static_cast<size_t>(n)) {
      Fail("Send and Receive disagree");
    }
  }
}

void Argv(const std::string& in) {
  std::vector<std::string> items = {"mcp-exec", "__zygote"};
  size_t start = 0;
  while (start <= in.size() && !in.empty()) {
    size_t end = in.find('\0', start);
    if (end == std::string::npos) end = in.size();
    items.push_back(in.substr(start, end - start));
    start = end + 1;
  }
  std::vector<char*> argv;
  for (std::string& s : items) argv.push_back(s.data());
  argv.push_back(nullptr);
  mcpexec::ZygoteArgs parsed;
  std::string error;
  if (!mcpexec::ZygoteArgs::Parse(static_cast<int>(items.size()), argv.data(), &parsed, &error)) {
    if (error.empty()) Fail("a refusal without a reason");
    return;
  }
  std::vector<std::string> again = parsed.ToArgv();
  std::vector<char*> again_argv;
  for (std::string& s : again) again_argv.push_back(s.data());
  again_argv.push_back(nullptr);
  mcpexec::ZygoteArgs reparsed;
  if (!mcpexec::ZygoteArgs::Parse(static_cast<int>(again.size()), again_argv.data(), &reparsed,
                                  &error) ||
      reparsed.ToArgv() != again) {
    Fail("the zygote's arguments do not round-trip");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_null = open("/dev/null", O_RDWR | O_CLOEXEC);
  return g_null >= 0 ? 0 : 1;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return -1;
  const std::string in(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0:
      Bundle(in);
      break;
    case 1:
      Control(in, data[0]);
      break;
    default:
      Argv(in);
      break;
  }
  return 0;
}
