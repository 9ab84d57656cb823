#include "sandbox/seccomp_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>

#include "base/unique_fd.h"

namespace mcpexec::sandbox::seccomp_policy {
namespace {

using enum Action;
using enum Presence;

// Calls Python, its six packages and the programs it starts (via subprocess)
// need. Anything not listed fails with EPERM: a soft failure that libraries
// report, rather than a crash. One name appears in one row only, and never in
// a row when it has argument rules (kArgRules).

constexpr Row kDescriptorIo[] = {
    {"read write", kAllow, "every stream: sys.stdin/stdout, open() files, subprocess pipes"},
    {"readv writev", kAllow,
     "os.readv/os.writev; glibc writes its fatal messages (malloc checks, abort) with writev"},
    {"pread64 pwrite64", kAllow,
     "the loader reads ELF headers at offsets; sqlite3 reads and writes its pages"},
    {"preadv pwritev preadv2 pwritev2", kAllow,
     "os.preadv/os.pwritev (the *2 forms when flags are given)"},
    {"lseek", kAllow, "file.seek()/tell(); io.open asks whether a stream is seekable"},
    {"close", kAllow, "releasing every descriptor the process opens"},
    {"close_range", kAllow, "subprocess closes inherited descriptors in the child before exec"},
    {"dup dup3", kAllow,
     "C libraries and shells duplicating descriptors; os.dup2(inheritable=False)"},
    {"dup2", kAllow, "subprocess puts pipes on the child's stdin/stdout/stderr (glibc on x86_64)",
     kLegacy},
    {"fcntl", kAllow,
     "descriptor flags (O_NONBLOCK, FD_CLOEXEC), os.dup (F_DUPFD_CLOEXEC), sqlite3 record locks"},
    {"flock", kAllow, "fcntl.flock(): whole-file locks taken by lock-file helpers and sqlite3"},
    {"fsync fdatasync", kAllow, "os.fsync and sqlite3 commits put written data on the disk"},
    {"ftruncate truncate", kAllow,
     "file.truncate()/os.truncate, sqlite3 journals; Landlock decides where"},
    {"fallocate", kAllow, "os.posix_fallocate(): glibc reserves file space with this call"},
    {"fadvise64 readahead", kAllow, "os.posix_fadvise and read-ahead hints; advisory only"},
    {"sendfile copy_file_range", kAllow,
     "shutil.copyfile, os.sendfile, os.copy_file_range copy inside the kernel"},
    {"splice tee", kAllow, "os.splice: pipe data moved without a copy through user space"},
    {"pipe2", kAllow, "os.pipe; subprocess and multiprocessing talk over pipes"},
    {"pipe", kAllow, "pipe(2) in programs subprocess starts (static binaries, other libcs)",
     kLegacy},
};

// Landlock and the mount namespace decide which paths; these rows only say
// that the kind of operation exists. On x86_64 glibc still makes several of
// the older calls itself (access, mkdir, rename, ...); where it does not, the
// programs subprocess starts (static binaries, other libcs) may.
constexpr Row kFiles[] = {
    {"fstat newfstatat statx", kAllow,
     "os.stat, os.path.exists, the import system's path finder, io.open's size check"},
    {"stat lstat", kAllow, "stat(2)/lstat(2) in programs subprocess starts (glibc: newfstatat)",
     kLegacy},
    {"statfs fstatfs", kAllow, "os.statvfs, shutil.disk_usage; glibc's pathconf/fpathconf"},
    {"access", kAllow, "os.access and shutil.which (glibc's access() on x86_64)", kLegacy},
    {"faccessat faccessat2", kAllow, "os.access with dir_fd= or effective_ids=True"},
    {"getdents64", kAllow, "os.listdir, os.scandir, glob, the import system listing packages"},
    {"getdents", kAllow, "directory listing in programs subprocess starts (the old call)", kLegacy},
    {"readlink", kAllow, "os.readlink, os.path.realpath (glibc's readlink() on x86_64)", kLegacy},
    {"readlinkat", kAllow, "os.readlink(dir_fd=...); readlink() where readlink(2) is missing"},
    {"getcwd chdir fchdir", kAllow, "os.getcwd/os.chdir/os.fchdir; subprocess's cwd= argument"},
    {"mkdir rmdir", kAllow, "os.mkdir/os.rmdir, tempfile.mkdtemp (glibc's calls on x86_64)",
     kLegacy},
    {"mkdirat", kAllow, "os.mkdir(dir_fd=...); mkdir() where mkdir(2) is missing"},
    {"unlink", kAllow, "os.remove, tempfile cleanup (glibc's unlink() on x86_64)", kLegacy},
    {"unlinkat", kAllow, "shutil.rmtree removes entries relative to a directory descriptor"},
    {"rename", kAllow, "os.rename/os.replace: a temporary file atomically replaces its target",
     kLegacy},
    {"renameat", kAllow, "os.rename(src_dir_fd=...); riscv64 has renameat2 only", kLegacy},
    {"renameat2", kAllow, "glibc's rename() where rename(2) and renameat(2) are missing"},
    {"link symlink", kAllow, "os.link/os.symlink, shutil.copytree (glibc's calls on x86_64)",
     kLegacy},
    {"linkat symlinkat", kAllow,
     "os.link/os.symlink with dir_fd=; the same where the old are missing"},
    {"utimensat", kAllow, "os.utime; shutil.copystat/copy2 carry timestamps over"},
    {"utime utimes futimesat", kAllow, "timestamps set by programs subprocess starts (old calls)",
     kLegacy},
    {"umask", kAllow, "os.umask; the mode of every file and directory created"},
    {"getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr", kAllow,
     "shutil.copy2/copystat read extended attributes (setting them stays EPERM)"},
};

constexpr Row kMemory[] = {
    {"brk", kAllow, "glibc malloc grows the heap for small blocks"},
    {"mmap munmap", kAllow, "malloc's large blocks, numpy arrays, the loader mapping .so files"},
    {"mprotect", kAllow, "the dynamic loader (RELRO) and guard pages of thread stacks"},
    {"mremap", kAllow, "realloc of large blocks (numpy arrays and lists that grow)"},
    {"madvise", kAllow, "malloc trimming; numpy asks for huge pages on large arrays"},
    {"msync", kAllow, "mmap.flush() and numpy.memmap.flush() write mapped files back"},
    {"mincore", kAllow, "page residency queries on the process's own mappings"},
    {"membarrier", kAllow, "process-wide memory barriers of lock-free runtimes; own threads only"},
    {"get_mempolicy", kAllow, "OpenBLAS and libnuma read the NUMA policy (query only)"},
    {"mbind", kErrnoEperm, "OpenBLAS tries it under matplotlib and copes with EPERM"},
    {"set_mempolicy migrate_pages move_pages", kErrnoEperm,
     "NUMA placement is the host's; migrate_pages/move_pages reach other processes too"},
    // 1 GiB held under a 512 MiB limit: memfd pages count against neither
    // RLIMIT_AS nor a tmpfs bound. Python needs it for nothing.
    {"memfd_create", kErrnoEperm,
     "anonymous shared memory that escapes RLIMIT_AS and every tmpfs bound"},
};

constexpr Row kTime[] = {
    {"clock_gettime clock_getres gettimeofday", kAllow,
     "time.time/monotonic/perf_counter when the vDSO does not answer"},
    {"time", kAllow, "time(2) when the vDSO does not answer (x86_64 keeps the call)", kLegacy},
    {"clock_nanosleep nanosleep", kAllow, "time.sleep(); sleep()/usleep() in C libraries"},
    {"times", kAllow, "os.times(): CPU time of the process and its children"},
    {"getitimer setitimer", kAllow, "signal.setitimer/getitimer: timeouts that raise a signal"},
    {"alarm", kAllow, "signal.alarm(), a common way for code to time itself out", kLegacy},
    {"timer_create timer_settime timer_gettime timer_getoverrun timer_delete", kAllow,
     "POSIX per-process timers (timer_create) of C libraries and profilers"},
    {"timerfd_create timerfd_settime timerfd_gettime", kAllow,
     "timers as descriptors that an event loop polls with its other descriptors"},
};

constexpr Row kEvents[] = {
    {"poll", kAllow, "select.poll, subprocess waiting on pipes (glibc's poll() on x86_64)",
     kLegacy},
    {"ppoll pselect6", kAllow, "select.select (glibc's select() is pselect6); poll() elsewhere"},
    {"select", kAllow, "select(2) in programs subprocess starts (glibc uses pselect6)", kLegacy},
    {"epoll_create1 epoll_ctl epoll_pwait epoll_pwait2", kAllow,
     "asyncio's default selector (selectors.EpollSelector)"},
    {"epoll_create epoll_wait", kAllow,
     "asyncio waits with epoll_wait (glibc on x86_64); epoll_create in older programs", kLegacy},
    {"eventfd2", kAllow, "os.eventfd: wake-ups between threads of an event loop"},
    {"signalfd4", kAllow, "signals read as a descriptor by event loops in C libraries"},
    {"inotify_init1", kErrnoEperm,
     "the uid's inotify quota is shared with every other run, and shows what they open"},
    {"inotify_init", kErrnoEperm, "the older form of inotify_init1, denied for the same reason",
     kLegacy},
};

// Landlock scoping (or the pid namespace) keeps signals inside the run.
constexpr Row kSignals[] = {
    {"rt_sigprocmask", kAllow,
     "signal.pthread_sigmask; glibc blocks signals around fork and threads"},
    {"rt_sigreturn restart_syscall", kAllow,
     "the kernel's signal delivery: return from a handler, resume an interrupted call"},
    {"rt_sigpending rt_sigsuspend rt_sigtimedwait", kAllow,
     "signal.sigpending, signal.sigwait, signal.sigtimedwait"},
    {"sigaltstack", kAllow, "faulthandler reports stack overflows from an alternate stack"},
    {"pause", kAllow, "signal.pause(): sleep until a signal arrives", kLegacy},
    {"kill", kAllow, "subprocess terminate()/kill(), os.kill; scoped by Landlock / pid namespace"},
    {"tgkill tkill", kAllow, "raise(), abort() and signal.pthread_kill: a signal to one thread"},
    {"pidfd_open pidfd_send_signal", kAllow,
     "os.pidfd_open: handles on children; their signals stay scoped like kill"},
};

constexpr Row kThreads[] = {
    {"futex futex_waitv", kAllow, "every lock, condition variable and join, the GIL included"},
    {"set_robust_list get_robust_list set_tid_address", kAllow,
     "glibc's thread start-up: robust mutexes, the tid to clear when a thread exits"},
    {"rseq", kAllow, "glibc registers restartable sequences for every thread it starts"},
    {"sched_yield", kAllow, "OpenBLAS and other thread pools yield while they spin-wait"},
    {"sched_getaffinity", kAllow, "os.cpu_count, OpenBLAS sizing its thread pool"},
    {"sched_getparam sched_getscheduler sched_get_priority_max sched_get_priority_min "
     "sched_rr_get_interval",
     kAllow, "os.sched_* queries; read-only (setting a scheduler stays EPERM)"},
    {"getcpu", kAllow, "sched_getcpu() in glibc and OpenMP runtimes when the vDSO does not"},
    {"getpriority", kAllow, "os.nice() and os.getpriority read the niceness"},
};

constexpr Row kProcesses[] = {
    {"execve", kAllow, "subprocess runs programs; the filter stays on across exec"},
    {"execveat", kAllow, "os.execve(fd, ...) and fexecve(): a program run by descriptor"},
    {"fork", kAllow, "fork(2) in programs subprocess starts (glibc's fork() is clone)", kLegacy},
    {"vfork", kAllow, "subprocess starts programs with vfork (glibc's vfork() on x86_64)", kLegacy},
    {"exit exit_group", kAllow, "a thread ends (exit) or the whole process does (exit_group)"},
    {"wait4 waitid", kAllow, "subprocess, os.waitpid and multiprocessing reap children"},
    {"getpid getppid gettid", kAllow, "os.getpid, logging records, tempfile and multiprocessing"},
    {"getuid geteuid getgid getegid getresuid getresgid getgroups", kAllow,
     "os.getuid & co, os.path.expanduser, getpass (setting ids stays EPERM)"},
    {"getpgid getsid", kAllow, "process group and session queries (os.getpgid, shells)"},
    {"getpgrp", kAllow, "os.getpgrp (glibc's getpgrp() on x86_64)", kLegacy},
    {"setsid", kAllow, "subprocess's start_new_session=True (the run's tree is still killed)"},
    {"setpgid", kAllow, "subprocess's process_group= and job control in shells"},
};

constexpr Row kSystem[] = {
    {"getrlimit", kAllow, "resource.getrlimit in programs subprocess starts (glibc: prlimit64)"},
    {"setrlimit", kAllow,
     "resource.setrlimit in programs subprocess starts; raising needs a dropped capability"},
    {"getrusage", kAllow, "resource.getrusage: CPU time and peak memory of the run"},
    {"sysinfo", kAllow, "os.sysconf('SC_PHYS_PAGES'): glibc's memory size queries"},
    {"uname", kAllow, "platform.uname(), os.uname(), sysconfig's platform tags"},
    {"arch_prctl", kAllow, "the loader sets thread-local storage (the FS base) at start-up",
     kX86Only},
    {"getrandom", kAllow, "os.urandom, random, secrets and the hash seed at start-up"},
    {"capget", kAllow, "capability queries by libcap users (setting them, capset, stays EPERM)"},
};

// socket() and socketpair() are AF_UNIX only (kArgRules), so these calls only
// ever see AF_UNIX sockets.
constexpr Row kSockets[] = {
    {"bind listen accept accept4 connect", kAllow,
     "multiprocessing managers and asyncio unix servers, on AF_UNIX sockets"},
    {"getsockname getpeername getsockopt setsockopt shutdown", kAllow,
     "options and addresses of AF_UNIX sockets (asyncio, multiprocessing.connection)"},
    {"sendto recvfrom recvmsg sendmmsg recvmmsg", kAllow,
     "data on AF_UNIX sockets: multiprocessing.connection, asyncio streams"},
    {"sendmsg", kAllow, "multiprocessing passes descriptors over AF_UNIX sockets (SCM_RIGHTS)"},
};

constexpr Row kFallbacks[] = {
    {"clone3", kErrnoEnosys,
     "glibc falls back to clone, whose flags we can inspect (EPERM would break threads)"},
    {"io_uring_setup io_uring_enter io_uring_register", kErrnoEnosys,
     "a large kernel surface the filter cannot see into; callers fall back to plain I/O"},
};

// EPERM is the default; these rows document the decision (chown & co, mknod
// of devices, SysV IPC, mq_*, fanotify, name_to_handle_at, quotactl, syslog,
// acct, capset and setuid & co are EPERM by not being listed).
constexpr Row kDenied[] = {
    {"mount umount2 pivot_root chroot", kErrnoEperm,
     "the mounts are the sandbox's: code may not rearrange them"},
    {"unshare setns", kErrnoEperm,
     "namespaces are the sandbox's: a new or foreign one would undo it"},
    {"keyctl add_key request_key", kErrnoEperm, "kernel keyrings are shared with the host"},
    {"bpf", kErrnoEperm, "loads programs into the kernel: a large attack surface"},
    {"userfaultfd", kErrnoEperm, "stalls kernel page faults at will: an exploitation primitive"},
    {"perf_event_open", kErrnoEperm, "hardware counters: side channels onto other processes"},
};

// Nothing legitimate asks for these: the process dies.
constexpr Row kKilled[] = {
    {"ptrace", kKill, "attaches to and controls other processes; a run debugs nothing"},
    {"process_vm_readv", kKill, "reads another process's memory directly"},
    {"process_vm_writev", kKill, "writes another process's memory directly"},
    {"open_by_handle_at", kKill, "bypasses path checks (the 'shocker' escape)"},
    {"kexec_load kexec_file_load", kKill, "replaces the running kernel"},
    {"init_module finit_module", kKill, "loads code into the kernel"},
    {"delete_module", kKill, "unloads code from the kernel"},
    {"reboot swapon swapoff", kKill, "host control: restarts the machine, changes its swap"},
    {"iopl ioperm", kKill, "raw hardware port I/O on x86", kX86Only},
};

constexpr Group kGroups[] = {
    {"I/O on descriptors the process already holds", kDescriptorIo},
    {"files and directories", kFiles},
    {"memory", kMemory},
    {"time", kTime},
    {"waiting for events", kEvents},
    {"signals", kSignals},
    {"threads and scheduling", kThreads},
    {"processes", kProcesses},
    {"limits, identity of the system, randomness", kSystem},
    {"sockets", kSockets},
    {"not implemented: a fallback exists", kFallbacks},
    {"denied: the sandbox's own machinery and shared kernel state", kDenied},
    {"killed", kKilled},
};

// A constant with the name it has in the kernel headers, spelled once.
#define MCP_NAMED(...) (Named{static_cast<uint64_t>(__VA_ARGS__), #__VA_ARGS__})

constexpr Condition Eq(unsigned arg, const char* arg_name, Named value) {
  return {Condition::Op::kEq, arg, arg_name, {}, value};
}
constexpr Condition MaskedEq(unsigned arg, const char* arg_name, Named mask, Named value) {
  return {Condition::Op::kMaskedEq, arg, arg_name, mask, value};
}

// The kernel takes these arguments as unsigned int: compare the low 32 bits
// only, so high bits set by the caller change nothing.
constexpr Named kLow32 = {0xFFFFFFFFULL, "0xffffffff"};
constexpr Named kSelf = {0, "0 (the caller)"};

// Every namespace flag clone() knows. CLONE_NEWTIME (0x80) is left out on
// purpose: for clone() that bit is part of the exit signal (CSIGNAL).
constexpr Named kCloneNamespaceFlags =
    MCP_NAMED(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
              CLONE_NEWPID | CLONE_NEWNET);

// The bits that make a file run as its owner or group.
constexpr Named kSetIds = MCP_NAMED(S_ISUID | S_ISGID);
// The open flags that create a file with the mode argument: O_CREAT, and
// O_TMPFILE (without its O_DIRECTORY bit, which plain opens carry too).
constexpr Named kCreates = {O_CREAT | (O_TMPFILE & ~O_DIRECTORY), "O_CREAT|O_TMPFILE"};

constexpr Condition Ioctl(Named request) { return MaskedEq(1, "request", kLow32, request); }
constexpr Condition PrctlOption(Named option) { return Eq(0, "option", option); }

constexpr ArgRule kArgRules[] = {
    // rt_sigaction for every signal but SIGSYS (31): the handler of the
    // sandbox's own names the call a killed run made, and stays. The kernel
    // reads signum as an int, so the rules look at its low bits only: a
    // signal whose five low bits are not all set (31, 63: SIGRTMIN+29) may
    // be handled; those two may only be queried.
    {"rt_sigaction",
     {MaskedEq(0, "signum", {1, "1"}, {0, "0"})},
     "signal.signal(); Python's SIGINT and faulthandler handlers (every signal but 31 and 63)"},
    {"rt_sigaction",
     {MaskedEq(0, "signum", {2, "2"}, {0, "0"})},
     "signal.signal() of a signal with bit 2 clear: never SIGSYS"},
    {"rt_sigaction",
     {MaskedEq(0, "signum", {4, "4"}, {0, "0"})},
     "signal.signal() of a signal with bit 4 clear: never SIGSYS"},
    {"rt_sigaction",
     {MaskedEq(0, "signum", {8, "8"}, {0, "0"})},
     "signal.signal() of a signal with bit 8 clear: never SIGSYS"},
    {"rt_sigaction",
     {MaskedEq(0, "signum", {16, "16"}, {0, "0"})},
     "signal.signal() of a signal with bit 16 clear: never SIGSYS"},
    {"rt_sigaction",
     {MaskedEq(0, "signum", {31, "0x1f"}, {31, "0x1f (SIGSYS, 63)"}),
      Eq(1, "act", {0, "NULL (the query)"})},
     "signal.getsignal(SIGSYS); setting a handler for it stays EPERM"},
    {"clone",
     {MaskedEq(0, "flags", kCloneNamespaceFlags, {0, "0"})},
     "pthread_create, fork() and subprocess's vfork go through clone; never a new namespace"},
    // ioctl requests Python and the C libraries make on pipes and files.
    {"ioctl",
     {Ioctl(MCP_NAMED(TCGETS))},
     "isatty(): io.open line-buffers terminals; pipes answer ENOTTY"},
    {"ioctl",
     {Ioctl(MCP_NAMED(TIOCGWINSZ))},
     "the terminal size for os.get_terminal_size and shutil.get_terminal_size"},
    {"ioctl",
     {Ioctl(MCP_NAMED(FIONREAD))},
     "bytes waiting in a pipe or socket, asked before sizing a read"},
    {"ioctl",
     {Ioctl(MCP_NAMED(FIONBIO))},
     "os.set_blocking, socket.setblocking: CPython sets O_NONBLOCK with it"},
    {"ioctl",
     {Ioctl(MCP_NAMED(FIOCLEX))},
     "os.set_inheritable(False): CPython sets close-on-exec with it"},
    {"ioctl",
     {Ioctl(MCP_NAMED(FIONCLEX))},
     "os.set_inheritable(True): CPython clears close-on-exec with it"},
    // prctl options that are harmless and used by runtimes.
    {"prctl",
     {PrctlOption(MCP_NAMED(PR_SET_NAME))},
     "worker pools and setproctitle-style code name the calling thread"},
    {"prctl",
     {PrctlOption(MCP_NAMED(PR_GET_NAME))},
     "reads the calling thread's name back (logging, thread pools)"},
    {"prctl",
     {PrctlOption(MCP_NAMED(PR_SET_PDEATHSIG))},
     "a child asks to die with its parent (helpers that subprocess starts)"},
    {"prctl",
     {PrctlOption(MCP_NAMED(PR_GET_PDEATHSIG))},
     "read-only: the signal set with PR_SET_PDEATHSIG"},
    {"prctl", {PrctlOption(MCP_NAMED(PR_GET_DUMPABLE))}, "read-only: may the process dump core"},
    {"prctl",
     {PrctlOption(MCP_NAMED(PR_SET_NO_NEW_PRIVS))},
     "only tightens: no_new_privs is already set"},
    {"prctl", {PrctlOption(MCP_NAMED(PR_GET_NO_NEW_PRIVS))}, "read-only: is no_new_privs set"},
    {"prctl",
     {PrctlOption(MCP_NAMED(PR_CAPBSET_READ))},
     "read-only: libcap users read the bounding set"},
    {"prctl", {PrctlOption(MCP_NAMED(PR_GET_SECCOMP))}, "read-only: is a filter on"},
    {"prctl",
     {PrctlOption(MCP_NAMED(PR_SET_CHILD_SUBREAPER))},
     "init-like helpers adopt their own orphaned descendants"},
    {"prctl",
     {PrctlOption(MCP_NAMED(PR_GET_CHILD_SUBREAPER))},
     "read-only: the flag set with PR_SET_CHILD_SUBREAPER"},
    // Every family that reaches a network fails with EPERM, so the network
    // stays off even where no network namespace could be made.
    {"socket",
     {Eq(0, "domain", MCP_NAMED(AF_UNIX))},
     "multiprocessing, asyncio, local IPC; no family that reaches a network"},
    {"socketpair",
     {Eq(0, "domain", MCP_NAMED(AF_UNIX))},
     "multiprocessing.Pipe, asyncio's self-pipe, subprocess helpers"},
    {"mknod",
     {MaskedEq(1, "mode", MCP_NAMED(S_IFMT), MCP_NAMED(S_IFIFO))},
     "mkfifo() in programs subprocess starts (glibc uses mknodat); never device nodes",
     kLegacy},
    {"mknodat",
     {MaskedEq(2, "mode", MCP_NAMED(S_IFMT), MCP_NAMED(S_IFIFO))},
     "os.mkfifo; never device nodes"},
    // Files are opened and their modes set freely, but never with the
    // setuid or setgid bit: inside a run they mean nothing (no_new_privs,
    // nosuid), and in a host folder mounted rw (MCP_EXEC_MOUNTS) a setuid
    // file of the run's uid would outlive the run, for the host's users.
    {"openat",
     {MaskedEq(2, "flags", kCreates, {0, "0"})},
     "every open that creates nothing: imports, reads, sqlite3, extension modules"},
    {"openat",
     {MaskedEq(3, "mode", kSetIds, {0, "0"})},
     "every file created: open(..., 'w'), tempfile; never setuid or setgid"},
    {"open",
     {MaskedEq(1, "flags", kCreates, {0, "0"})},
     "open(2) in programs subprocess starts (glibc uses openat)",
     kLegacy},
    {"open",
     {MaskedEq(2, "mode", kSetIds, {0, "0"})},
     "files created by programs subprocess starts; never setuid or setgid",
     kLegacy},
    {"chmod",
     {MaskedEq(1, "mode", kSetIds, {0, "0"})},
     "os.chmod, shutil.copymode (glibc's chmod() on x86_64); never setuid or setgid",
     kLegacy},
    {"fchmod",
     {MaskedEq(1, "mode", kSetIds, {0, "0"})},
     "os.chmod on a descriptor, shutil.copystat; never setuid or setgid"},
    {"fchmodat",
     {MaskedEq(2, "mode", kSetIds, {0, "0"})},
     "os.chmod with dir_fd= or follow_symlinks; never setuid or setgid"},
    {"prlimit64",
     {Eq(0, "pid", kSelf)},
     "glibc's getrlimit/setrlimit; never another process of the same uid"},
    // Another run's processes (or the next spare) may never be reniced or
    // pinned.
    {"setpriority",
     {Eq(0, "which", MCP_NAMED(PRIO_PROCESS)), Eq(1, "who", kSelf)},
     "os.nice(); never another run"},
    {"sched_setaffinity",
     {Eq(0, "pid", kSelf)},
     "os.sched_setaffinity(0, ...); never another run's CPUs"},
    {"personality",
     {MaskedEq(0, "persona", kLow32, {0xFFFFFFFFULL, "0xffffffff (the query)"})},
     "the query form (platform checks); setting a domain or ADDR_NO_RANDOMIZE stays EPERM"},
};

#undef MCP_NAMED

constexpr Policy kPolicy = {kGroups, kArgRules};

constexpr const char* kArgRulesGroup = "argument rules";

uint32_t ToLibseccomp(Action action) {
  switch (action) {
    case kAllow:
      return SCMP_ACT_ALLOW;
    case kErrnoEperm:
      return SCMP_ACT_ERRNO(EPERM);
    case kErrnoEnosys:
      return SCMP_ACT_ERRNO(ENOSYS);
    case kKill:
      return SCMP_ACT_TRAP;  // the handler names the call, then the process dies
  }
  return SCMP_ACT_ERRNO(EPERM);
}

const char* ActionName(Action action) {
  switch (action) {
    case kAllow:
      return "allow";
    case kErrnoEperm:
      return "errno EPERM";
    case kErrnoEnosys:
      return "errno ENOSYS";
    case kKill:
      return "kill";
  }
  return "?";
}

std::string Failed(const std::string& what, int rc) { return what + ": " + strerror(-rc); }

// Resolves a name for the native architecture into *nr; -1 when the row
// says the syscall may be missing here and it is. A name libseccomp does not
// know (a typo) and a missing syscall the row does not expect are errors.
bool Resolve(const char* name, Presence presence, int* nr, std::string* error) {
  *nr = seccomp_syscall_resolve_name(name);
  if (*nr == __NR_SCMP_ERROR) {
    *error = std::string("seccomp policy: unknown syscall name '") + name + "'";
    return false;
  }
  if (*nr >= 0) return true;
  // A negative number is libseccomp's placeholder for a syscall that exists
  // on other architectures only.
  if (presence == kEverywhere) {
    *error = std::string("seccomp policy: '") + name +
             "' does not exist on this architecture; its row must say so (Presence)";
    return false;
  }
  *nr = -1;
  return true;
}

bool AddRows(scmp_filter_ctx ctx, const Policy& policy, std::string* error) {
  for (const Group& group : policy.groups) {
    for (const Row& row : group.rows) {
      for (const std::string& name : SyscallNames(row)) {
        int nr = 0;
        if (!Resolve(name.c_str(), row.presence, &nr, error)) return false;
        // EPERM is the default action; libseccomp refuses rules that repeat
        // it. Those rows document the decision.
        if (nr < 0 || row.action == kErrnoEperm) continue;
        int rc = seccomp_rule_add(ctx, ToLibseccomp(row.action), nr, 0);
        if (rc < 0) return *error = Failed("seccomp_rule_add(" + name + ")", rc), false;
      }
    }
  }
  return true;
}

scmp_arg_cmp ToLibseccomp(const Condition& c) {
  if (c.op == Condition::Op::kMaskedEq) {
    return {c.arg, SCMP_CMP_MASKED_EQ, c.mask.value, c.value.value};
  }
  return {c.arg, SCMP_CMP_EQ, c.value.value, 0};
}

bool AddArgRules(scmp_filter_ctx ctx, const Policy& policy, std::string* error) {
  for (const ArgRule& rule : policy.arg_rules) {
    int nr = 0;
    if (!Resolve(rule.syscall, rule.presence, &nr, error)) return false;
    if (nr < 0) continue;
    std::vector<scmp_arg_cmp> cmps;
    for (const Condition& c : rule.conditions) {
      if (c.op != Condition::Op::kUnused) cmps.push_back(ToLibseccomp(c));
    }
    int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, static_cast<unsigned>(cmps.size()),
                                    cmps.data());
    if (rc < 0) {
      return *error = Failed(std::string("seccomp_rule_add(") + rule.syscall + ")", rc), false;
    }
  }
  return true;
}

// Exports the filter as BPF through a memfd (libseccomp writes to an fd).
bool Export(scmp_filter_ctx ctx, std::vector<sock_filter>* program, std::string* error) {
  UniqueFd fd(memfd_create("mcp-exec-seccomp", MFD_CLOEXEC));
  int rc = !fd ? -errno : seccomp_export_bpf(ctx, fd.get());
  if (rc < 0) {
    *error = Failed("seccomp_export_bpf", rc);
    return false;
  }
  off_t size = lseek(fd.get(), 0, SEEK_END);
  program->resize(static_cast<size_t>(size) / sizeof(sock_filter));
  ssize_t n = pread(fd.get(), program->data(), size, 0);
  if (n != size || size % sizeof(sock_filter) != 0) {
    *error = "seccomp_export_bpf produced an unreadable program";
    return false;
  }
  return true;
}

std::string NameOrNumber(const Named& n) {
  if (n.name != nullptr && *n.name != '\0') return n.name;
  return std::to_string(n.value);
}

// Where each syscall of the rows is: "group: row", for the checks.
bool IndexRows(const Policy& policy, std::map<std::string, std::string>* where,
               std::string* problem) {
  for (const Group& group : policy.groups) {
    for (const Row& row : group.rows) {
      std::string here = std::string(group.title) + ": " + row.syscalls;
      if (row.why == nullptr || *row.why == '\0') return *problem = here + ": no reason", false;
      std::vector<std::string> names = SyscallNames(row);
      if (names.empty()) return *problem = here + ": no syscall", false;
      for (const std::string& name : names) {
        auto [it, added] = where->emplace(name, here);
        if (!added) {
          *problem = name + " is in two rows (" + it->second + "; " + here + ")";
          return false;
        }
      }
    }
  }
  return true;
}

std::string CheckArgRule(const ArgRule& rule, const std::map<std::string, std::string>& rows) {
  std::string here = std::string(kArgRulesGroup) + ": " + rule.syscall;
  if (rule.why == nullptr || *rule.why == '\0') return here + ": no reason";
  auto row = rows.find(rule.syscall);
  if (row != rows.end()) {
    return std::string(rule.syscall) + " has argument rules and a row (" + row->second +
           "): an unconditional row would shadow them";
  }
  bool any = false;
  for (const Condition& c : rule.conditions) {
    if (c.op == Condition::Op::kUnused) continue;
    any = true;
    if (c.arg > 5) return here + ": argument index " + std::to_string(c.arg) + " (0-5 exist)";
  }
  // Without a condition the rule would allow the syscall unconditionally.
  if (!any) return here + ": no condition";
  return "";
}

}  // namespace

const Policy& DefaultPolicy() { return kPolicy; }

std::vector<std::string> SyscallNames(const Row& row) {
  std::vector<std::string> names;
  std::string name;
  for (const char* p = row.syscalls; p != nullptr && *p != '\0'; ++p) {
    if (*p != ' ') {
      name += *p;
    } else if (!name.empty()) {
      names.push_back(std::move(name));
      name.clear();
    }
  }
  if (!name.empty()) names.push_back(std::move(name));
  return names;
}

std::string ConditionText(const ArgRule& rule) {
  std::string text;
  for (const Condition& c : rule.conditions) {
    if (c.op == Condition::Op::kUnused) continue;
    if (!text.empty()) text += " and ";
    text += "arg" + std::to_string(c.arg) + " (" + c.arg_name + ")";
    if (c.op == Condition::Op::kMaskedEq) {
      std::string mask = NameOrNumber(c.mask);
      bool compound = mask.find(' ') != std::string::npos;
      text += " & " + (compound ? "(" + mask + ")" : mask);
    }
    text += " == " + NameOrNumber(c.value);
  }
  return text;
}

std::string Check(const Policy& policy) {
  std::map<std::string, std::string> rows;
  std::string problem;
  if (!IndexRows(policy, &rows, &problem)) return problem;
  for (const ArgRule& rule : policy.arg_rules) {
    problem = CheckArgRule(rule, rows);
    if (!problem.empty()) return problem;
  }
  return "";
}

namespace {

// The killed calls' messages, made in the zygote (Prepare) and read by the
// SIGSYS handler of every runner: nothing is allocated in the handler.
struct KilledCall {
  int nr = -1;
  char text[256] = {};
  size_t len = 0;
};
std::array<KilledCall, 32> g_killed;
size_t g_killed_count = 0;

void NoteKilledCalls(const Policy& policy) {
  g_killed_count = 0;
  for (const Group& group : policy.groups) {
    for (const Row& row : group.rows) {
      if (row.action != kKill) continue;
      for (const std::string& name : SyscallNames(row)) {
        const int nr = seccomp_syscall_resolve_name(name.c_str());
        if (nr < 0 || g_killed_count == g_killed.size()) continue;
        KilledCall& k = g_killed[g_killed_count++];
        k.nr = nr;
        const int n = snprintf(k.text, sizeof k.text,
                               "\nmcp-exec: the sandbox ended this run at system call %s (number "
                               "%d), which is never allowed here: %s\n",
                               name.c_str(), nr, row.why);
        k.len = std::min(static_cast<size_t>(std::max(n, 0)), sizeof k.text - 1);
      }
    }
  }
}

// SIGSYS from the filter's trap: which call, to the run's stderr; then the
// same call again, which (SIGSYS being blocked in its own handler) the
// kernel answers with SIGSYS's default action: the process dies of it.
void NameTheCallAndDie(int sig, siginfo_t* info, void*) {
  const int nr = info->si_syscall;
  for (size_t i = 0; i < g_killed_count; ++i) {
    if (g_killed[i].nr == nr) (void)!write(STDERR_FILENO, g_killed[i].text, g_killed[i].len);
  }
  syscall(nr, 0, 0, 0, 0, 0, 0);
  kill(getpid(), SIGKILL);  // not reached: the call above ends the process
  (void)sig;
}

}  // namespace

bool Prepare(const Policy& policy, std::vector<sock_filter>* program, std::string* error) {
  NoteKilledCalls(policy);
  std::string problem = Check(policy);
  if (!problem.empty()) {
    *error = "seccomp policy: " + problem;
    return false;
  }
  // Default: EPERM. Foreign architectures (i386, x32 entry points) are not
  // added to the filter, so libseccomp kills on them (SCMP_FLTATR_ACT_BADARCH).
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (ctx == nullptr) {
    *error = "seccomp_init failed";
    return false;
  }
  bool ok =
      AddRows(ctx, policy, error) && AddArgRules(ctx, policy, error) && Export(ctx, program, error);
  seccomp_release(ctx);
  return ok;
}

bool Prepare(std::vector<sock_filter>* program, std::string* error) {
  return Prepare(kPolicy, program, error);
}

bool Apply(const std::vector<sock_filter>& program, std::string* error) {
  struct sigaction sa {};
  sa.sa_sigaction = NameTheCallAndDie;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, nullptr) != 0) {
    *error = std::string("sigaction(SIGSYS): ") + strerror(errno);
    return false;
  }
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
  for (const Group& group : kPolicy.groups) {
    for (const Row& row : group.rows) {
      for (const std::string& name : SyscallNames(row)) {
        out.push_back({name, ActionName(row.action), row.why, group.title});
      }
    }
  }
  for (const ArgRule& rule : kPolicy.arg_rules) {
    out.push_back({rule.syscall, "allow if " + ConditionText(rule), rule.why, kArgRulesGroup});
  }
  out.push_back({"(anything else)", "errno EPERM", "default deny", ""});
  return out;
}

}  // namespace mcpexec::sandbox::seccomp_policy
