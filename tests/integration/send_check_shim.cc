// Preloaded into the server by SendRaceTest (LD_PRELOAD): every sendmsg that
// carries descriptors waits SEND_CHECK_DELAY_MS before it is made, which
// widens the window between a sender finding the zygote's control socket and
// sending on it, then checks that the descriptor still names the socket it
// named when the send began. If it was closed meanwhile, or its number now
// names another file (a new zygote's socket, a client's connection), the run
// and its descriptors would go there: the shim says so on stderr, where the
// test looks for it. The zygote and the runs never see it (the zygote starts
// with an environment of its own).
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {

using SendmsgFn = ssize_t (*)(int, const msghdr*, int);

void Say(int fd, const char* what) {
  char line[160];
  int n = snprintf(line, sizeof line, "send_check: descriptor %d was %s during a send\n", fd, what);
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n));
}

}  // namespace

extern "C" ssize_t sendmsg(int fd, const msghdr* msg, int flags) {
  static SendmsgFn real = reinterpret_cast<SendmsgFn>(dlsym(RTLD_NEXT, "sendmsg"));
  const char* delay = getenv("SEND_CHECK_DELAY_MS");
  if (!delay || !msg || msg->msg_controllen == 0) return real(fd, msg, flags);
  struct stat before {
  }, after{};
  if (fstat(fd, &before) != 0) return real(fd, msg, flags);
  long ms = atol(delay);
  timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  if (fstat(fd, &after) != 0) {
    Say(fd, "closed");
  } else if (after.st_ino != before.st_ino || after.st_dev != before.st_dev) {
    Say(fd, "closed and reused");
  }
  return real(fd, msg, flags);
}
