#include "sandbox/seccomp_policy.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <pthread.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <termios.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "sandbox/credentials.h"
#include "sandbox_test_util.h"

namespace mcpexec::testing {
namespace {

using sandbox::seccomp_policy::Action;
using sandbox::seccomp_policy::Apply;
using sandbox::seccomp_policy::ArgRule;
using sandbox::seccomp_policy::Condition;
using sandbox::seccomp_policy::DefaultPolicy;
using sandbox::seccomp_policy::Group;
using sandbox::seccomp_policy::Policy;
using sandbox::seccomp_policy::Prepare;
using sandbox::seccomp_policy::Presence;
using sandbox::seccomp_policy::Row;
using sandbox::seccomp_policy::SyscallNames;

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
    // The handler that names a killed call stays the sandbox's (issue 36,
    // point 17): SIGSYS's handler cannot be replaced, also with high bits.
    {"rt_sigaction(SIGSYS, handler)",
     [] {
       struct sigaction sa {};
       sa.sa_handler = SIG_IGN;
       return Errno(sigaction(SIGSYS, &sa, nullptr));
     },
     EPERM, 0},
    {"rt_sigaction(SIGSYS | 1 << 32, handler)",
     [] {
       struct sigaction sa {};
       sa.sa_handler = SIG_IGN;
       return Errno(syscall(SYS_rt_sigaction, 0x10000001Full, &sa, nullptr, 8));
     },
     EPERM, 0},
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

// Kernels built or booted without the i386 entry point (ia32_emulation=0,
// CONFIG_IA32_EMULATION_DEFAULT_DISABLED; 6.7 and later) answer int 0x80 with
// SIGSEGV before any filter sees it: the call is refused all the same, by the
// kernel. Probed without a filter, so the expectation follows the kernel.
bool IsI386Entry(const Forbidden& f) { return std::string(f.what).rfind("i386 entry", 0) == 0; }

int I386EntrySignal() {
  for (const Forbidden& f : kForbidden) {
    if (!IsI386Entry(f)) continue;
    Outcome bare = InChild([] { return true; }, f.call);
    if (bare.killed && bare.signal == SIGSEGV) return SIGSEGV;
  }
  return SIGSYS;
}

TEST_F(SeccompPolicyTest, ForbiddenCalls) {
  const int i386_signal = I386EntrySignal();
  if (i386_signal == SIGSEGV) {
    std::cout << "note: this kernel has no i386 entry point (int 0x80 is SIGSEGV without a "
                 "filter): the filter's own kill of it cannot be seen here\n";
  }
  for (const Forbidden& f : kForbidden) {
    Outcome o = Run(f.call);
    if (IsI386Entry(f)) {
      EXPECT_TRUE(o.killed && o.signal == i386_signal) << f.what << ": " << o.ToString();
      continue;
    }
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
    {"rt_sigaction(SIGUSR1, handler) and every other signal but 31 and 63",
     [] {
       struct sigaction sa {};
       sa.sa_handler = SIG_IGN;
       for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGCHLD, SIGPIPE, SIGXFSZ, 34}) {
         if (sigaction(sig, &sa, nullptr) != 0) return errno;
       }
       return 0;
     }},
    {"rt_sigaction(SIGSYS) query",
     [] {
       struct sigaction old {};
       return Errno(sigaction(SIGSYS, nullptr, &old));
     }},
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

// --- The table itself: no kernel filter needed, libseccomp only ---

// Every syscall named by a row, with the row's action.
std::map<std::string, Action> RowSyscalls(const Policy& policy) {
  std::map<std::string, Action> out;
  for (const Group& g : policy.groups) {
    for (const Row& r : g.rows) {
      for (const std::string& name : SyscallNames(r)) out.emplace(name, r.action);
    }
  }
  return out;
}

TEST(SeccompPolicyTable, IsConsistent) {
  EXPECT_EQ(sandbox::seccomp_policy::Check(DefaultPolicy()), "");
}

TEST(SeccompPolicyTable, NoRowShadowsAnArgumentRule) {
  std::map<std::string, Action> rows = RowSyscalls(DefaultPolicy());
  for (const ArgRule& rule : DefaultPolicy().arg_rules) {
    auto it = rows.find(rule.syscall);
    // An unconditional allow would undo the rule; any other action would
    // contradict it.
    EXPECT_EQ(it, rows.end()) << rule.syscall << " has argument rules and a row";
  }
}

TEST(SeccompPolicyTable, NoSyscallInTwoRows) {
  std::map<std::string, int> seen;
  for (const Group& g : DefaultPolicy().groups) {
    for (const Row& r : g.rows) {
      for (const std::string& name : SyscallNames(r)) {
        EXPECT_EQ(++seen[name], 1) << name << " is in two rows (again in " << g.title << ")";
      }
    }
  }
}

// A reason says who needs the call or why it is denied, in a few words: not a
// category ("files", "I/O") and not a pointer to another row ("see mount").
void ExpectRealReason(const std::string& why, const std::string& what) {
  std::istringstream in(why);
  size_t words = 0;
  for (std::string w; in >> w;) ++words;
  EXPECT_GE(words, 3U) << what << ": reason too short: '" << why << "'";
  EXPECT_GE(why.size(), 15U) << what << ": reason too short: '" << why << "'";
  EXPECT_NE(why.rfind("see ", 0), 0U) << what << ": a reason of its own, please: '" << why << "'";
}

TEST(SeccompPolicyTable, EveryRowHasARealReason) {
  for (const Group& g : DefaultPolicy().groups) {
    EXPECT_NE(std::string(g.title), "");
    EXPECT_FALSE(g.rows.empty()) << g.title;
    for (const Row& r : g.rows) ExpectRealReason(r.why, r.syscalls);
  }
  for (const ArgRule& rule : DefaultPolicy().arg_rules) {
    ExpectRealReason(rule.why, std::string(rule.syscall) + " if " +
                                   sandbox::seccomp_policy::ConditionText(rule));
  }
}

// The architectures the policy is written for. A row may only say a syscall
// is missing somewhere if it really is, and must say so if it is.
TEST(SeccompPolicyTable, PresenceFlagsAreAccurate) {
  auto on = [](uint32_t arch, const std::string& name) {
    return seccomp_syscall_resolve_name_arch(arch, name.c_str()) >= 0;
  };
  auto check = [&](const std::string& name, Presence presence) {
    bool x86 = on(SCMP_ARCH_X86_64, name);
    bool arm = on(SCMP_ARCH_AARCH64, name);
    bool riscv = on(SCMP_ARCH_RISCV64, name);
    switch (presence) {
      case Presence::kEverywhere:
        EXPECT_TRUE(x86 && arm && riscv) << name << " is not everywhere: mark its row";
        break;
      case Presence::kLegacy:
        EXPECT_TRUE(x86 && !(arm && riscv)) << name << " is not a legacy call";
        break;
      case Presence::kX86Only:
        EXPECT_TRUE(x86 && !arm && !riscv) << name << " is not x86-only";
        break;
    }
  };
  for (const Group& g : DefaultPolicy().groups) {
    for (const Row& r : g.rows) {
      for (const std::string& name : SyscallNames(r)) check(name, r.presence);
    }
  }
  for (const ArgRule& rule : DefaultPolicy().arg_rules) check(rule.syscall, rule.presence);
}

// Describe() is generated from the same tables the filter is built from.
TEST(SeccompPolicyTable, DescribeReadsTheTables) {
  std::vector<sandbox::seccomp_policy::RuleDoc> docs = sandbox::seccomp_policy::Describe();
  size_t rows = RowSyscalls(DefaultPolicy()).size();
  ASSERT_EQ(docs.size(), rows + DefaultPolicy().arg_rules.size() + 1);
  for (size_t i = 0; i < DefaultPolicy().arg_rules.size(); ++i) {
    const ArgRule& rule = DefaultPolicy().arg_rules[i];
    const auto& doc = docs[rows + i];
    EXPECT_EQ(doc.syscall, rule.syscall);
    EXPECT_EQ(doc.action, "allow if " + sandbox::seccomp_policy::ConditionText(rule));
    EXPECT_EQ(doc.why, rule.why);
  }
  std::set<std::string> ioctls;
  for (const auto& d : docs) {
    if (d.syscall == "ioctl") ioctls.insert(d.action);
  }
  for (const char* name : {"TCGETS", "TIOCGWINSZ", "FIONREAD", "FIONBIO", "FIOCLEX", "FIONCLEX"}) {
    EXPECT_EQ(ioctls.count(std::string("allow if arg1 (request) & 0xffffffff == ") + name), 1U)
        << name;
  }
  for (const auto& d : docs) {
    if (d.syscall == "socket") {
      EXPECT_EQ(d.action, "allow if arg0 (domain) == AF_UNIX");
    }
    if (d.syscall == "setpriority") {
      EXPECT_EQ(d.action, "allow if arg0 (which) == PRIO_PROCESS and arg1 (who) == 0 (the caller)");
    }
  }
}

constexpr Row kReadRow[] = {{"read", Action::kAllow, "a row that is fine"}};
constexpr Group kReadGroup[] = {{"test", kReadRow}};

std::string PrepareError(const Policy& policy) {
  std::vector<sock_filter> program;
  std::string error;
  if (Prepare(policy, &program, &error)) return "";
  return error.empty() ? "(failed without an error)" : error;
}

TEST(SeccompPolicyTable, UnknownSyscallNameIsAnError) {
  static constexpr Row kTypo[] = {{"read", Action::kAllow, "a row that is fine"},
                                  {"mmapp", Action::kAllow, "a mistyped name"}};
  static constexpr Group kGroups[] = {{"test", kTypo}};
  EXPECT_NE(PrepareError({kGroups, {}}).find("'mmapp'"), std::string::npos)
      << PrepareError({kGroups, {}});
  // Even where the row would only document a decision (EPERM adds no rule).
  static constexpr Row kTypoDenied[] = {{"mountt", Action::kErrnoEperm, "a mistyped name"}};
  static constexpr Group kDenied[] = {{"test", kTypoDenied}};
  EXPECT_NE(PrepareError({kDenied, {}}).find("'mountt'"), std::string::npos);
  static constexpr ArgRule kTypoRule[] = {
      {"sockett", {Condition{Condition::Op::kEq, 0, "domain", {}, {AF_UNIX, "AF_UNIX"}}}, "typo"}};
  EXPECT_NE(PrepareError({kReadGroup, kTypoRule}).find("'sockett'"), std::string::npos);
  EXPECT_EQ(PrepareError({kReadGroup, {}}), "");
}

TEST(SeccompPolicyTable, SyscallMissingOnThisArchMustBeExpected) {
  // _llseek exists on 32-bit architectures only: libseccomp knows the name.
  static constexpr Row kSilent[] = {{"_llseek", Action::kAllow, "not on x86_64"}};
  static constexpr Group kSilentGroup[] = {{"test", kSilent}};
  EXPECT_NE(PrepareError({kSilentGroup, {}}).find("'_llseek'"), std::string::npos);
  static constexpr Row kSaid[] = {{"_llseek", Action::kAllow, "not on x86_64", Presence::kLegacy}};
  static constexpr Group kSaidGroup[] = {{"test", kSaid}};
  EXPECT_EQ(PrepareError({kSaidGroup, {}}), "");
}

TEST(SeccompPolicyTable, ShadowingRowsAndDuplicatesAreErrors) {
  static constexpr ArgRule kUnixOnly[] = {
      {"socket", {Condition{Condition::Op::kEq, 0, "domain", {}, {AF_UNIX, "AF_UNIX"}}}, "unix"}};
  static constexpr Row kSocketRow[] = {{"read socket", Action::kAllow, "would undo AF_UNIX"}};
  static constexpr Group kShadow[] = {{"test", kSocketRow}};
  std::string error = PrepareError({kShadow, kUnixOnly});
  EXPECT_NE(error.find("socket"), std::string::npos) << error;
  EXPECT_NE(error.find("shadow"), std::string::npos) << error;
  EXPECT_EQ(PrepareError({kReadGroup, kUnixOnly}), "");

  static constexpr Row kTwice[] = {{"read", Action::kAllow, "once"},
                                   {"write read", Action::kKill, "twice"}};
  static constexpr Group kTwiceGroup[] = {{"test", kTwice}};
  error = PrepareError({kTwiceGroup, {}});
  EXPECT_NE(error.find("read is in two rows"), std::string::npos) << error;

  // A rule without a condition would be an unconditional allow.
  static constexpr ArgRule kNoCondition[] = {{"socket", {}, "no condition at all"}};
  error = PrepareError({kReadGroup, kNoCondition});
  EXPECT_NE(error.find("no condition"), std::string::npos) << error;
}

// Issue 20, point 8: the seccomp layer's line in SECURITY.md's table of
// layers says what the table holds. Each claim of that line, as it is
// written there, and what Describe() must show for its syscalls.
TEST(SeccompPolicyTable, TheLayerDescriptionSaysWhatTheTableHolds) {
  std::ifstream in(std::string(MCP_EXEC_SOURCE_DIR) + "/SECURITY.md");
  ASSERT_TRUE(in) << "SECURITY.md";
  std::string row;
  for (std::string line; std::getline(in, line);) {
    // The first: the table of layers (a later table says where it holds).
    if (row.empty() && line.rfind("| seccomp | ", 0) == 0) row = line;
  }
  ASSERT_FALSE(row.empty()) << "SECURITY.md has no seccomp row in its table of layers";
  std::multimap<std::string, std::string> actions;
  for (const auto& d : sandbox::seccomp_policy::Describe()) actions.emplace(d.syscall, d.action);
  struct Claim {
    const char* phrase;                 // as SECURITY.md says it
    std::vector<const char*> syscalls;  // what it speaks of
    const char* action;                 // every rule of theirs starts so; "" none allows
  };
  const Claim claims[] = {
      {"`socket` for AF_UNIX only", {"socket"}, "allow if arg0 (domain) == AF_UNIX"},
      {"`clone3` answers ENOSYS", {"clone3"}, "errno ENOSYS"},
      {"`ioctl` by request", {"ioctl"}, "allow if arg1 (request)"},
      {"no `memfd_create`, SysV shared memory or inotify",
       {"memfd_create", "shmget", "shmat", "shmctl", "inotify_init1", "inotify_add_watch"},
       ""},
      {"`setpriority`, `sched_setaffinity` and `prlimit64` on the caller itself only",
       {"setpriority", "sched_setaffinity", "prlimit64"},
       "allow if arg0"},
      {"`ptrace`, `process_vm_*`, `open_by_handle_at`, module and kexec calls kill the process",
       {"ptrace", "process_vm_readv", "process_vm_writev", "open_by_handle_at", "init_module",
        "finit_module", "delete_module", "kexec_load", "kexec_file_load"},
       "kill"},
  };
  for (const Claim& c : claims) {
    EXPECT_NE(row.find(c.phrase), std::string::npos) << "SECURITY.md no longer says: " << c.phrase;
    for (const char* name : c.syscalls) {
      auto [first, last] = actions.equal_range(name);
      if (*c.action == '\0') {
        for (auto it = first; it != last; ++it) {
          EXPECT_NE(it->second.rfind("allow", 0), 0U) << name << ": " << it->second;
        }
        continue;
      }
      EXPECT_NE(first, last) << c.phrase << ": the table has no rule for " << name;
      for (auto it = first; it != last; ++it) {
        EXPECT_EQ(it->second.rfind(c.action, 0), 0U)
            << c.phrase << ": " << name << " is '" << it->second << "'";
      }
    }
  }
}

}  // namespace
}  // namespace mcpexec::testing
