#include "sandbox/seccomp_policy.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <termios.h>

#include "sandbox/credentials.h"
#include "sandbox_test_util.h"

namespace mcpexec::testing {
namespace {

using sandbox::seccomp_policy::Apply;
using sandbox::seccomp_policy::Prepare;

class SeccompPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (prctl(PR_GET_SECCOMP) < 0) GTEST_SKIP() << "this kernel has no seccomp (CONFIG_SECCOMP)";
    std::string error;
    ASSERT_TRUE(Prepare(&program_, &error)) << error;
  }
  Outcome Run(const std::function<int()>& call) {
    return InChild(
        [&] {
          std::string error;
          return sandbox::credentials::ApplyNoNewPrivs(&error) && Apply(program_, &error);
        },
        call);
  }
  std::vector<sock_filter> program_;
};

struct Forbidden {
  const char* what;
  std::function<int()> call;
  int error;   // expected errno, or 0 when the process must die
  int signal;  // expected signal when error is 0
};

// One line per call the policy must refuse.
const Forbidden kForbidden[] = {
    {"socket(AF_INET)", [] { return Errno(socket(AF_INET, SOCK_STREAM, 0)); }, EPERM, 0},
    {"socket(AF_INET6)", [] { return Errno(socket(AF_INET6, SOCK_DGRAM, 0)); }, EPERM, 0},
    {"socket(AF_PACKET)", [] { return Errno(socket(AF_PACKET, SOCK_RAW, 0)); }, EPERM, 0},
    {"socket(AF_NETLINK)", [] { return Errno(socket(AF_NETLINK, SOCK_RAW, 0)); }, EPERM, 0},
    {"socket(AF_VSOCK)", [] { return Errno(socket(40, SOCK_STREAM, 0)); }, EPERM, 0},
    {"socketpair(AF_INET)",
     [] {
       int sv[2];
       return Errno(socketpair(AF_INET, SOCK_STREAM, 0, sv));
     },
     EPERM, 0},
    {"clone(CLONE_NEWUSER)",
     [] { return Errno(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)); }, EPERM, 0},
    {"clone(CLONE_NEWNET)",
     [] { return Errno(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0)); }, EPERM, 0},
    {"clone3", [] { return Errno(syscall(SYS_clone3, nullptr, 0)); }, ENOSYS, 0},
    {"unshare(CLONE_NEWNS)", [] { return Errno(syscall(SYS_unshare, CLONE_NEWNS)); }, EPERM, 0},
    {"setns", [] { return Errno(syscall(SYS_setns, 0, 0)); }, EPERM, 0},
    {"mount", [] { return Errno(syscall(SYS_mount, "none", "/mnt", "tmpfs", 0, nullptr)); }, EPERM,
     0},
    {"umount2", [] { return Errno(syscall(SYS_umount2, "/", 0)); }, EPERM, 0},
    {"chroot", [] { return Errno(syscall(SYS_chroot, "/")); }, EPERM, 0},
    {"pivot_root", [] { return Errno(syscall(SYS_pivot_root, "/", "/")); }, EPERM, 0},
    {"ioctl(TIOCSTI)",
     [] {
       char c = 'x';
       return Errno(ioctl(0, TIOCSTI, &c));
     },
     EPERM, 0},
    {"ioctl(TIOCSTI) high bits set",
     [] {
       char c = 'x';
       return Errno(syscall(SYS_ioctl, 0, 0xFFFFFFFF00005412ull, &c));
     },
     EPERM, 0},
    {"personality(PER_LINUX32)", [] { return Errno(syscall(SYS_personality, 0x0008)); }, EPERM, 0},
    {"keyctl", [] { return Errno(syscall(SYS_keyctl, 0, 0, 0, 0, 0)); }, EPERM, 0},
    {"add_key", [] { return Errno(syscall(SYS_add_key, "user", "k", "v", 1, -3)); }, EPERM, 0},
    {"bpf", [] { return Errno(syscall(SYS_bpf, 0, nullptr, 0)); }, EPERM, 0},
    {"userfaultfd", [] { return Errno(syscall(SYS_userfaultfd, 0)); }, EPERM, 0},
    {"perf_event_open", [] { return Errno(syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0)); },
     EPERM, 0},
    {"io_uring_setup", [] { return Errno(syscall(SYS_io_uring_setup, 1, nullptr)); }, ENOSYS, 0},
    {"mknod(S_IFCHR)", [] { return Errno(mknod("dev-null-copy", S_IFCHR | 0600, makedev(1, 3))); },
     EPERM, 0},
    {"prlimit64(pid 1)",
     [] {
       rlimit r;
       return Errno(syscall(SYS_prlimit64, 1, RLIMIT_NOFILE, nullptr, &r));
     },
     EPERM, 0},
    {"memfd_create", [] { return Errno(syscall(SYS_memfd_create, "x", 0)); }, EPERM, 0},
    {"inotify_init1", [] { return Errno(syscall(SYS_inotify_init1, 0)); }, EPERM, 0},
    {"inotify_init", [] { return Errno(syscall(SYS_inotify_init)); }, EPERM, 0},
    {"setpriority(PRIO_PROCESS, pid 1)", [] { return Errno(setpriority(PRIO_PROCESS, 1, 19)); },
     EPERM, 0},
    {"setpriority(PRIO_PGRP, 0)", [] { return Errno(setpriority(PRIO_PGRP, 0, 19)); }, EPERM, 0},
    {"setpriority(PRIO_USER, 0)", [] { return Errno(setpriority(PRIO_USER, 0, 19)); }, EPERM, 0},
    {"sched_setaffinity(pid 1)",
     [] {
       cpu_set_t s;
       CPU_ZERO(&s);
       CPU_SET(0, &s);
       return Errno(sched_setaffinity(1, sizeof s, &s));
     },
     EPERM, 0},
    {"prctl(PR_SET_MM)", [] { return Errno(prctl(PR_SET_MM, 0, 0, 0, 0)); }, EPERM, 0},
    {"setuid(0)", [] { return Errno(syscall(SYS_setuid, 0)); }, EPERM, 0},
    {"capset", [] { return Errno(syscall(SYS_capset, nullptr, nullptr)); }, EPERM, 0},
    {"mbind", [] { return Errno(syscall(SYS_mbind, 0, 0, 0, 0, 0, 0)); }, EPERM, 0},
    {"ptrace", [] { return Errno(syscall(SYS_ptrace, 0, 0, 0, 0)); }, 0, SIGSYS},
    {"process_vm_readv", [] { return Errno(syscall(SYS_process_vm_readv, 1, 0, 0, 0, 0, 0)); }, 0,
     SIGSYS},
    {"process_vm_writev", [] { return Errno(syscall(SYS_process_vm_writev, 1, 0, 0, 0, 0, 0)); }, 0,
     SIGSYS},
    {"open_by_handle_at", [] { return Errno(syscall(SYS_open_by_handle_at, 0, nullptr, 0)); }, 0,
     SIGSYS},
    {"kexec_load", [] { return Errno(syscall(SYS_kexec_load, 0, 0, 0, 0)); }, 0, SIGSYS},
    {"init_module", [] { return Errno(syscall(SYS_init_module, nullptr, 0, "")); }, 0, SIGSYS},
    {"iopl", [] { return Errno(syscall(SYS_iopl, 3)); }, 0, SIGSYS},
    {"i386 entry point (int 0x80, getpid)",
     [] {
       long r;
       asm volatile("int $0x80" : "=a"(r) : "a"(20) : "memory");
       return r < 0 ? static_cast<int>(-r) : 0;
     },
     0, SIGSYS},
};

TEST_F(SeccompPolicyTest, ForbiddenCalls) {
  for (const Forbidden& f : kForbidden) {
    Outcome o = Run(f.call);
    if (f.error) {
      EXPECT_FALSE(o.killed) << f.what << ": " << o.ToString();
      EXPECT_EQ(o.error, f.error) << f.what << ": " << o.ToString();
    } else {
      EXPECT_TRUE(o.killed && o.signal == f.signal) << f.what << ": " << o.ToString();
    }
  }
}

struct Needed {
  const char* what;
  std::function<int()> call;
};

void* ThreadBody(void*) { return nullptr; }

// One line per call Python, its packages and subprocess need.
const Needed kNeeded[] = {
    {"socket(AF_UNIX)", [] { return Errno(socket(AF_UNIX, SOCK_STREAM, 0)); }},
    {"socketpair(AF_UNIX)",
     [] {
       int sv[2];
       return Errno(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
     }},
    {"pthread_create (clone with thread flags)",
     [] {
       pthread_t t;
       int e = pthread_create(&t, nullptr, ThreadBody, nullptr);
       if (e == 0) pthread_join(t, nullptr);
       return e;
     }},
    {"fork + wait",
     [] {
       pid_t p = fork();
       if (p == 0) _exit(0);
       int st;
       return p < 0 ? errno : Errno(waitpid(p, &st, 0));
     }},
    {"vfork + execve(/bin/true)",
     [] {
       pid_t p = vfork();
       if (p == 0) {
         execl("/bin/true", "true", nullptr);
         _exit(127);
       }
       int st = 0;
       waitpid(p, &st, 0);
       return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
     }},
    {"pipe2 + ioctl(FIONREAD)",
     [] {
       int p[2], n;
       if (pipe2(p, O_CLOEXEC)) return errno;
       return Errno(ioctl(p[0], FIONREAD, &n));
     }},
    {"ioctl(TCGETS) answers ENOTTY on a pipe",
     [] {
       int p[2];
       termios t;
       if (pipe(p)) return errno;
       return ioctl(p[0], TCGETS, &t) < 0 && errno == ENOTTY ? 0 : 1;
     }},
    {"mkfifo",
     [] {
       char path[] = "/tmp/seccomp-test-fifo-XXXXXX";
       int fd = mkstemp(path);
       close(fd);
       unlink(path);
       int e = Errno(mkfifo(path, 0600));
       unlink(path);
       return e;
     }},
    {"prlimit64(self)",
     [] {
       rlimit r;
       return Errno(getrlimit(RLIMIT_NOFILE, &r));
     }},
    {"personality query", [] { return Errno(syscall(SYS_personality, 0xffffffff)); }},
    {"getrandom",
     [] {
       char b[8];
       return Errno(syscall(SYS_getrandom, b, sizeof b, 0));
     }},
    {"sched_getaffinity",
     [] {
       cpu_set_t s;
       return Errno(sched_getaffinity(0, sizeof s, &s));
     }},
    {"prctl(PR_SET_NAME)", [] { return Errno(prctl(PR_SET_NAME, "worker")); }},
    {"setpriority(PRIO_PROCESS, self)", [] { return Errno(setpriority(PRIO_PROCESS, 0, 1)); }},
    {"sched_setaffinity(self)",
     [] {
       cpu_set_t s;
       if (sched_getaffinity(0, sizeof s, &s)) return errno;
       return Errno(sched_setaffinity(0, sizeof s, &s));
     }},
    {"kill(self, 0)", [] { return Errno(kill(getpid(), 0)); }},
};

TEST_F(SeccompPolicyTest, CallsPythonNeeds) {
  for (const Needed& n : kNeeded) {
    Outcome o = Run(n.call);
    EXPECT_FALSE(o.killed) << n.what << ": " << o.ToString();
    EXPECT_EQ(o.error, 0) << n.what << ": " << o.ToString();
  }
}

TEST_F(SeccompPolicyTest, EveryRuleIsDocumented) {
  for (const auto& r : sandbox::seccomp_policy::Describe()) {
    EXPECT_FALSE(r.why.empty()) << r.syscall;
  }
}

}  // namespace
}  // namespace mcpexec::testing
