#include "sandbox/seccomp_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace mcpexec::sandbox::seccomp_policy {
namespace {

enum class Act { kAllow, kErrno, kEnosys, kKill };

struct Rule {
  const char* name;
  Act act;
  const char* why;
};

// Calls Python, its six packages and the programs it starts (via subprocess)
// need. Anything not listed fails with EPERM: a soft failure that libraries
// report, rather than a crash.
constexpr Rule kRules[] = {
    // --- I/O on descriptors the process already holds ---
    {"read", Act::kAllow, "I/O"},
    {"write", Act::kAllow, "I/O"},
    {"readv", Act::kAllow, "I/O"},
    {"writev", Act::kAllow, "I/O"},
    {"pread64", Act::kAllow, "I/O"},
    {"pwrite64", Act::kAllow, "I/O"},
    {"preadv", Act::kAllow, "I/O"},
    {"pwritev", Act::kAllow, "I/O"},
    {"preadv2", Act::kAllow, "I/O"},
    {"pwritev2", Act::kAllow, "I/O"},
    {"lseek", Act::kAllow, "I/O"},
    {"close", Act::kAllow, "I/O"},
    {"close_range", Act::kAllow, "subprocess closes inherited fds"},
    {"dup", Act::kAllow, "I/O"},
    {"dup2", Act::kAllow, "I/O"},
    {"dup3", Act::kAllow, "I/O"},
    {"fcntl", Act::kAllow, "I/O flags, locks"},
    {"flock", Act::kAllow, "file locks (sqlite3)"},
    {"fsync", Act::kAllow, "I/O"},
    {"fdatasync", Act::kAllow, "I/O"},
    {"ftruncate", Act::kAllow, "I/O"},
    {"truncate", Act::kAllow, "I/O; Landlock decides where"},
    {"fallocate", Act::kAllow, "I/O"},
    {"fadvise64", Act::kAllow, "I/O hints"},
    {"readahead", Act::kAllow, "I/O hints"},
    {"sendfile", Act::kAllow, "shutil.copyfile"},
    {"copy_file_range", Act::kAllow, "shutil.copyfile"},
    {"splice", Act::kAllow, "I/O"},
    {"tee", Act::kAllow, "I/O"},
    {"pipe", Act::kAllow, "subprocess"},
    {"pipe2", Act::kAllow, "subprocess"},
    // --- files: Landlock and the mount namespace decide which ---
    {"open", Act::kAllow, "files"},
    {"openat", Act::kAllow, "files"},
    {"stat", Act::kAllow, "files"},
    {"fstat", Act::kAllow, "files"},
    {"lstat", Act::kAllow, "files"},
    {"newfstatat", Act::kAllow, "files"},
    {"statx", Act::kAllow, "files"},
    {"statfs", Act::kAllow, "files"},
    {"fstatfs", Act::kAllow, "files"},
    {"access", Act::kAllow, "files"},
    {"faccessat", Act::kAllow, "files"},
    {"faccessat2", Act::kAllow, "files"},
    {"getdents", Act::kAllow, "listing"},
    {"getdents64", Act::kAllow, "listing"},
    {"readlink", Act::kAllow, "files"},
    {"readlinkat", Act::kAllow, "files"},
    {"getcwd", Act::kAllow, "files"},
    {"chdir", Act::kAllow, "files"},
    {"fchdir", Act::kAllow, "files"},
    {"mkdir", Act::kAllow, "files"},
    {"mkdirat", Act::kAllow, "files"},
    {"rmdir", Act::kAllow, "files"},
    {"unlink", Act::kAllow, "files"},
    {"unlinkat", Act::kAllow, "files"},
    {"rename", Act::kAllow, "files"},
    {"renameat", Act::kAllow, "files"},
    {"renameat2", Act::kAllow, "files"},
    {"link", Act::kAllow, "files"},
    {"linkat", Act::kAllow, "files"},
    {"symlink", Act::kAllow, "files"},
    {"symlinkat", Act::kAllow, "files"},
    {"chmod", Act::kAllow, "files"},
    {"fchmod", Act::kAllow, "files"},
    {"fchmodat", Act::kAllow, "files"},
    {"utime", Act::kAllow, "files"},
    {"utimes", Act::kAllow, "files"},
    {"utimensat", Act::kAllow, "files"},
    {"futimesat", Act::kAllow, "files"},
    {"umask", Act::kAllow, "files"},
    {"getxattr", Act::kAllow, "shutil.copy2 reads xattrs"},
    {"lgetxattr", Act::kAllow, "shutil.copy2 reads xattrs"},
    {"fgetxattr", Act::kAllow, "shutil.copy2 reads xattrs"},
    {"listxattr", Act::kAllow, "shutil.copy2 reads xattrs"},
    {"llistxattr", Act::kAllow, "shutil.copy2 reads xattrs"},
    {"flistxattr", Act::kAllow, "shutil.copy2 reads xattrs"},
    // memfd_create: shared memory outside RLIMIT_AS and every tmpfs bound
    // (1 GiB held under a 512 MiB limit). inotify: a per-uid quota shared
    // with every other run, and a view of what they open. Python needs
    // neither.
    {"memfd_create", Act::kErrno, "shared memory that escapes the memory limit"},
    {"inotify_init", Act::kErrno, "the uid's inotify quota is shared with other runs"},
    {"inotify_init1", Act::kErrno, "the uid's inotify quota is shared with other runs"},
    // --- memory ---
    {"brk", Act::kAllow, "malloc"},
    {"mmap", Act::kAllow, "malloc, imports"},
    {"munmap", Act::kAllow, "malloc"},
    {"mprotect", Act::kAllow, "loader, thread stacks"},
    {"mremap", Act::kAllow, "realloc of large blocks (numpy)"},
    {"madvise", Act::kAllow, "malloc trimming"},
    {"msync", Act::kAllow, "mmap'd files"},
    {"mincore", Act::kAllow, "page residency queries"},
    {"membarrier", Act::kAllow, "runtime barriers"},
    {"get_mempolicy", Act::kAllow, "NUMA query"},
    {"mbind", Act::kErrno, "OpenBLAS tries it under matplotlib and copes with EPERM"},
    {"set_mempolicy", Act::kErrno, "NUMA placement: not ours to change"},
    {"migrate_pages", Act::kErrno, "NUMA placement: not ours to change"},
    {"move_pages", Act::kErrno, "NUMA placement: not ours to change"},
    // --- time ---
    {"clock_gettime", Act::kAllow, "time"},
    {"clock_getres", Act::kAllow, "time"},
    {"clock_nanosleep", Act::kAllow, "time.sleep"},
    {"nanosleep", Act::kAllow, "time.sleep"},
    {"gettimeofday", Act::kAllow, "time"},
    {"time", Act::kAllow, "time"},
    {"times", Act::kAllow, "os.times"},
    {"getitimer", Act::kAllow, "signal.setitimer"},
    {"setitimer", Act::kAllow, "signal.setitimer"},
    {"alarm", Act::kAllow, "signal.alarm"},
    {"timer_create", Act::kAllow, "POSIX timers"},
    {"timer_settime", Act::kAllow, "POSIX timers"},
    {"timer_gettime", Act::kAllow, "POSIX timers"},
    {"timer_getoverrun", Act::kAllow, "POSIX timers"},
    {"timer_delete", Act::kAllow, "POSIX timers"},
    {"timerfd_create", Act::kAllow, "event loops"},
    {"timerfd_settime", Act::kAllow, "event loops"},
    {"timerfd_gettime", Act::kAllow, "event loops"},
    // --- waiting for events ---
    {"poll", Act::kAllow, "select, subprocess"},
    {"ppoll", Act::kAllow, "select"},
    {"select", Act::kAllow, "select"},
    {"pselect6", Act::kAllow, "select"},
    {"epoll_create", Act::kAllow, "asyncio"},
    {"epoll_create1", Act::kAllow, "asyncio"},
    {"epoll_ctl", Act::kAllow, "asyncio"},
    {"epoll_wait", Act::kAllow, "asyncio"},
    {"epoll_pwait", Act::kAllow, "asyncio"},
    {"epoll_pwait2", Act::kAllow, "asyncio"},
    {"eventfd2", Act::kAllow, "event loops"},
    {"signalfd4", Act::kAllow, "event loops"},
    // --- signals: Landlock scoping (or the pid namespace) keeps them inside the run ---
    {"rt_sigaction", Act::kAllow, "signal handlers"},
    {"rt_sigprocmask", Act::kAllow, "signal masks"},
    {"rt_sigreturn", Act::kAllow, "signal delivery"},
    {"rt_sigpending", Act::kAllow, "signals"},
    {"rt_sigsuspend", Act::kAllow, "signals"},
    {"rt_sigtimedwait", Act::kAllow, "signal.sigwait"},
    {"sigaltstack", Act::kAllow, "faulthandler"},
    {"pause", Act::kAllow, "signal.pause"},
    {"restart_syscall", Act::kAllow, "signal delivery"},
    {"kill", Act::kAllow, "subprocess, os.kill; scoped by Landlock / pid namespace"},
    {"tgkill", Act::kAllow, "raise(), thread signals"},
    {"tkill", Act::kAllow, "raise()"},
    // --- threads and scheduling ---
    {"futex", Act::kAllow, "locks"},
    {"futex_waitv", Act::kAllow, "locks"},
    {"set_robust_list", Act::kAllow, "threads"},
    {"get_robust_list", Act::kAllow, "threads"},
    {"set_tid_address", Act::kAllow, "threads"},
    {"rseq", Act::kAllow, "glibc thread start"},
    {"sched_yield", Act::kAllow, "threads"},
    {"sched_getaffinity", Act::kAllow, "os.cpu_count, OpenBLAS"},
    {"sched_getparam", Act::kAllow, "scheduling queries"},
    {"sched_getscheduler", Act::kAllow, "scheduling queries"},
    {"sched_get_priority_max", Act::kAllow, "scheduling queries"},
    {"sched_get_priority_min", Act::kAllow, "scheduling queries"},
    {"sched_rr_get_interval", Act::kAllow, "scheduling queries"},
    {"getcpu", Act::kAllow, "glibc"},
    {"getpriority", Act::kAllow, "os.nice"},
    // --- processes (clone is argument-filtered below) ---
    {"execve", Act::kAllow, "subprocess; the filter stays on across exec"},
    {"execveat", Act::kAllow, "subprocess"},
    {"fork", Act::kAllow, "os.fork"},
    {"vfork", Act::kAllow, "subprocess"},
    {"exit", Act::kAllow, "threads"},
    {"exit_group", Act::kAllow, "exit"},
    {"wait4", Act::kAllow, "subprocess"},
    {"waitid", Act::kAllow, "subprocess"},
    {"getpid", Act::kAllow, "ids"},
    {"getppid", Act::kAllow, "ids"},
    {"gettid", Act::kAllow, "ids"},
    {"getuid", Act::kAllow, "ids"},
    {"geteuid", Act::kAllow, "ids"},
    {"getgid", Act::kAllow, "ids"},
    {"getegid", Act::kAllow, "ids"},
    {"getresuid", Act::kAllow, "ids"},
    {"getresgid", Act::kAllow, "ids"},
    {"getgroups", Act::kAllow, "ids"},
    {"getpgid", Act::kAllow, "process groups"},
    {"getpgrp", Act::kAllow, "process groups"},
    {"getsid", Act::kAllow, "sessions"},
    {"setsid", Act::kAllow, "start_new_session (the tree is still killed)"},
    {"setpgid", Act::kAllow, "process groups"},
    {"getrlimit", Act::kAllow, "resource"},
    {"setrlimit", Act::kAllow, "resource (raising needs a capability we dropped)"},
    {"getrusage", Act::kAllow, "resource"},
    {"sysinfo", Act::kAllow, "memory queries"},
    {"uname", Act::kAllow, "platform"},
    {"arch_prctl", Act::kAllow, "thread-local storage"},
    {"getrandom", Act::kAllow, "os.urandom, random, hash seeds"},
    {"capget", Act::kAllow, "capability queries"},
    {"pidfd_open", Act::kAllow, "process handles; signals stay scoped"},
    {"pidfd_send_signal", Act::kAllow, "process handles; signals stay scoped"},
    // --- sockets: socket()/socketpair() are limited to AF_UNIX below ---
    {"bind", Act::kAllow, "AF_UNIX only (socket is filtered)"},
    {"listen", Act::kAllow, "AF_UNIX only"},
    {"accept", Act::kAllow, "AF_UNIX only"},
    {"accept4", Act::kAllow, "AF_UNIX only"},
    {"connect", Act::kAllow, "AF_UNIX only"},
    {"getsockname", Act::kAllow, "AF_UNIX only"},
    {"getpeername", Act::kAllow, "AF_UNIX only"},
    {"sendto", Act::kAllow, "AF_UNIX only"},
    {"recvfrom", Act::kAllow, "AF_UNIX only"},
    {"sendmsg", Act::kAllow, "AF_UNIX only; multiprocessing passes fds"},
    {"recvmsg", Act::kAllow, "AF_UNIX only"},
    {"sendmmsg", Act::kAllow, "AF_UNIX only"},
    {"recvmmsg", Act::kAllow, "AF_UNIX only"},
    {"shutdown", Act::kAllow, "AF_UNIX only"},
    {"setsockopt", Act::kAllow, "AF_UNIX only"},
    {"getsockopt", Act::kAllow, "AF_UNIX only"},
    // --- fallbacks exist: say "not implemented" ---
    {"clone3", Act::kEnosys,
     "glibc falls back to clone, whose flags we can inspect (EPERM would break threads)"},
    {"io_uring_setup", Act::kEnosys, "a large kernel surface; callers fall back to plain I/O"},
    {"io_uring_enter", Act::kEnosys, "see io_uring_setup"},
    {"io_uring_register", Act::kEnosys, "see io_uring_setup"},
    // --- nothing legitimate asks for these: the process dies ---
    {"ptrace", Act::kKill, "debugging other processes"},
    {"process_vm_readv", Act::kKill, "reading another process's memory"},
    {"process_vm_writev", Act::kKill, "writing another process's memory"},
    {"open_by_handle_at", Act::kKill, "bypasses path checks (the 'shocker' escape)"},
    {"kexec_load", Act::kKill, "replaces the kernel"},
    {"kexec_file_load", Act::kKill, "replaces the kernel"},
    {"init_module", Act::kKill, "loads kernel code"},
    {"finit_module", Act::kKill, "loads kernel code"},
    {"delete_module", Act::kKill, "unloads kernel code"},
    {"reboot", Act::kKill, "host control"},
    {"swapon", Act::kKill, "host control"},
    {"swapoff", Act::kKill, "host control"},
    {"iopl", Act::kKill, "raw port I/O"},
    {"ioperm", Act::kKill, "raw port I/O"},
    // Explicitly EPERM (the default) to document them: mount, umount2,
    // unshare, setns, pivot_root, chroot, keyctl, add_key, request_key, bpf,
    // userfaultfd, perf_event_open, setuid & co, capset, chown & co, mknod,
    // SysV IPC, mq_*, fanotify, name_to_handle_at, quotactl, syslog, acct.
    {"mount", Act::kErrno, "namespaces and mounts are the sandbox's, not the code's"},
    {"umount2", Act::kErrno, "see mount"},
    {"unshare", Act::kErrno, "see mount"},
    {"setns", Act::kErrno, "see mount"},
    {"pivot_root", Act::kErrno, "see mount"},
    {"chroot", Act::kErrno, "see mount"},
    {"keyctl", Act::kErrno, "kernel keyrings are shared with the host"},
    {"add_key", Act::kErrno, "kernel keyrings are shared with the host"},
    {"request_key", Act::kErrno, "kernel keyrings are shared with the host"},
    {"bpf", Act::kErrno, "a large kernel surface"},
    {"userfaultfd", Act::kErrno, "a classic exploitation primitive"},
    {"perf_event_open", Act::kErrno, "side channels"},
};

// Every namespace flag clone() knows. CLONE_NEWTIME (0x80) is left out on
// purpose: for clone() that bit is part of the exit signal (CSIGNAL).
constexpr uint64_t kCloneNamespaceFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
                                          CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                          CLONE_NEWNET;

// ioctl requests Python and the C libraries make on pipes and files. The
// request is an unsigned int in the kernel: compare the low 32 bits only.
struct Ioctl {
  uint64_t request;
  const char* name;
};
constexpr Ioctl kIoctls[] = {
    {0x5401, "TCGETS (isatty)"}, {0x5413, "TIOCGWINSZ (terminal size)"},
    {0x541B, "FIONREAD"},        {0x5421, "FIONBIO"},
    {0x5451, "FIOCLEX"},         {0x5450, "FIONCLEX"},
};

// prctl options that are harmless and used by runtimes.
struct Prctl {
  uint64_t option;
  const char* name;
};
constexpr Prctl kPrctls[] = {
    {PR_SET_NAME, "PR_SET_NAME"},
    {PR_GET_NAME, "PR_GET_NAME"},
    {PR_SET_PDEATHSIG, "PR_SET_PDEATHSIG"},
    {PR_GET_PDEATHSIG, "PR_GET_PDEATHSIG"},
    {PR_GET_DUMPABLE, "PR_GET_DUMPABLE"},
    {PR_SET_NO_NEW_PRIVS, "PR_SET_NO_NEW_PRIVS"},
    {PR_GET_NO_NEW_PRIVS, "PR_GET_NO_NEW_PRIVS"},
    {PR_CAPBSET_READ, "PR_CAPBSET_READ"},
    {PR_GET_SECCOMP, "PR_GET_SECCOMP"},
    {PR_SET_CHILD_SUBREAPER, "PR_SET_CHILD_SUBREAPER"},
    {PR_GET_CHILD_SUBREAPER, "PR_GET_CHILD_SUBREAPER"},
};

uint32_t ToLibseccomp(Act act) {
  switch (act) {
    case Act::kAllow:
      return SCMP_ACT_ALLOW;
    case Act::kErrno:
      return SCMP_ACT_ERRNO(EPERM);
    case Act::kEnosys:
      return SCMP_ACT_ERRNO(ENOSYS);
    case Act::kKill:
      return SCMP_ACT_KILL_PROCESS;
  }
  return SCMP_ACT_ERRNO(EPERM);
}

const char* ActName(Act act) {
  switch (act) {
    case Act::kAllow:
      return "allow";
    case Act::kErrno:
      return "errno EPERM";
    case Act::kEnosys:
      return "errno ENOSYS";
    case Act::kKill:
      return "kill";
  }
  return "?";
}

std::string Failed(const char* what, int rc) { return std::string(what) + ": " + strerror(-rc); }

bool Build(scmp_filter_ctx ctx, std::string* error) {
  int rc;
  for (const Rule& r : kRules) {
    int nr = seccomp_syscall_resolve_name(r.name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    // EPERM is the default action; libseccomp refuses rules that repeat it.
    // Those lines document the decision in the table.
    if (r.act == Act::kErrno) continue;
    if ((rc = seccomp_rule_add(ctx, ToLibseccomp(r.act), nr, 0)) < 0) {
      *error = Failed((std::string("seccomp_rule_add(") + r.name + ")").c_str(), rc);
      return false;
    }
  }
  // clone: threads and fork-like children only, never new namespaces.
  rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                        SCMP_A0(SCMP_CMP_MASKED_EQ, kCloneNamespaceFlags, 0));
  if (rc < 0) return *error = Failed("seccomp_rule_add(clone)", rc), false;
  for (const Ioctl& i : kIoctls) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                          SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFull, i.request));
    if (rc < 0) return *error = Failed("seccomp_rule_add(ioctl)", rc), false;
  }
  for (const Prctl& p : kPrctls) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, p.option));
    if (rc < 0) return *error = Failed("seccomp_rule_add(prctl)", rc), false;
  }
  // Sockets: AF_UNIX only (multiprocessing, asyncio and subprocess need
  // socketpair). Every family that reaches a network fails with EPERM, so
  // the network stays off even where no network namespace could be made.
  rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
  if (rc < 0) return *error = Failed("seccomp_rule_add(socket)", rc), false;
  rc =
      seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
  if (rc < 0) return *error = Failed("seccomp_rule_add(socketpair)", rc), false;
  // mknod: FIFOs only (os.mkfifo); device nodes never.
  rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mknod), 1,
                        SCMP_A1(SCMP_CMP_MASKED_EQ, S_IFMT, S_IFIFO));
  if (rc < 0) return *error = Failed("seccomp_rule_add(mknod)", rc), false;
  rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mknodat), 1,
                        SCMP_A2(SCMP_CMP_MASKED_EQ, S_IFMT, S_IFIFO));
  if (rc < 0) return *error = Failed("seccomp_rule_add(mknodat)", rc), false;
  // prlimit64 on ourselves only (glibc's getrlimit/setrlimit): never on
  // another process of the same uid.
  rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, SCMP_A0(SCMP_CMP_EQ, 0));
  if (rc < 0) return *error = Failed("seccomp_rule_add(prlimit64)", rc), false;
  // Scheduling of the caller itself only: another run's processes (or the
  // next spare) may never be reniced or pinned. setpriority(PRIO_PROCESS, 0)
  // is os.nice(); sched_setaffinity(0, ...) is os.sched_setaffinity(0, ...).
  rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(setpriority), 2,
                        SCMP_A0(SCMP_CMP_EQ, PRIO_PROCESS), SCMP_A1(SCMP_CMP_EQ, 0));
  if (rc < 0) return *error = Failed("seccomp_rule_add(setpriority)", rc), false;
  rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(sched_setaffinity), 1,
                        SCMP_A0(SCMP_CMP_EQ, 0));
  if (rc < 0) return *error = Failed("seccomp_rule_add(sched_setaffinity)", rc), false;
  // personality: the query form only (0xffffffff); no execution domains.
  rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(personality), 1,
                        SCMP_A0(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFull, 0xFFFFFFFFull));
  if (rc < 0) return *error = Failed("seccomp_rule_add(personality)", rc), false;
  return true;
}

}  // namespace

bool Prepare(std::vector<sock_filter>* program, std::string* error) {
  // Default: EPERM. Foreign architectures (i386, x32 entry points) are not
  // added to the filter, so libseccomp kills on them (SCMP_FLTATR_ACT_BADARCH).
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (!ctx) {
    *error = "seccomp_init failed";
    return false;
  }
  bool ok = Build(ctx, error);
  int fd = -1;
  if (ok) {
    fd = memfd_create("mcp-exec-seccomp", MFD_CLOEXEC);
    int rc = fd < 0 ? -errno : seccomp_export_bpf(ctx, fd);
    if (rc < 0) {
      *error = Failed("seccomp_export_bpf", rc);
      ok = false;
    }
  }
  seccomp_release(ctx);
  if (!ok) {
    if (fd >= 0) close(fd);
    return false;
  }
  off_t size = lseek(fd, 0, SEEK_END);
  program->resize(static_cast<size_t>(size) / sizeof(sock_filter));
  ssize_t n = pread(fd, program->data(), size, 0);
  close(fd);
  if (n != size || size % sizeof(sock_filter) != 0) {
    *error = "seccomp_export_bpf produced an unreadable program";
    return false;
  }
  return true;
}

bool Apply(const std::vector<sock_filter>& program, std::string* error) {
  sock_fprog prog{static_cast<unsigned short>(program.size()),
                  const_cast<sock_filter*>(program.data())};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    *error = std::string("prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER): ") + strerror(errno);
    return false;
  }
  return true;
}

std::vector<RuleDoc> Describe() {
  std::vector<RuleDoc> out;
  for (const Rule& r : kRules) out.push_back({r.name, ActName(r.act), r.why});
  out.push_back({"clone", "allow if no namespace flag", "threads, fork, vfork"});
  for (const Ioctl& i : kIoctls) out.push_back({"ioctl", std::string("allow ") + i.name, "libc"});
  for (const Prctl& p : kPrctls)
    out.push_back({"prctl", std::string("allow ") + p.name, "runtimes"});
  out.push_back({"socket", "allow AF_UNIX only", "no family that reaches a network"});
  out.push_back({"socketpair", "allow AF_UNIX only", "multiprocessing, asyncio"});
  out.push_back({"mknod, mknodat", "allow S_IFIFO only", "os.mkfifo; never device nodes"});
  out.push_back({"prlimit64", "allow on self (pid 0) only", "glibc get/setrlimit"});
  out.push_back(
      {"setpriority", "allow PRIO_PROCESS of self (0) only", "os.nice; never another run"});
  out.push_back({"sched_setaffinity", "allow on self (pid 0) only", "never another run's CPUs"});
  out.push_back({"personality", "allow the query only", "no execution domains"});
  out.push_back({"(anything else)", "errno EPERM", "default deny"});
  return out;
}

}  // namespace mcpexec::sandbox::seccomp_policy
