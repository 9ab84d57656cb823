// A measured prototype for the CPU a one-shot call costs (issue 39): each
// run today is two copies of the zygote's image and two teardowns, since the
// init of the run's pid namespace is a fork of the zygote and forks the
// runner in turn. The design it measures: the init shares the zygote's
// memory (CLONE_VM, a small stack, raw system calls only: it only waits to
// be killed), and the zygote forks the runner itself into the init's
// namespace (setns on the init's pidfd with CLONE_NEWPID); one copy, one
// teardown. Needs root (CAP_SYS_ADMIN for the namespaces) and x86_64.
//
//   cc -O2 -o lean_init bench/lean_init.c && ./lean_init MIB [ROUNDS]
//
// Prints one JSON line: for "today" and "lean", the p50 wall time of a
// run's processes from the first fork to the last reap, and the CPU they
// took (this process's and its reaped children's, user and system), per run.
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "image.h"

// This process's CPU and its reaped children's: a fork's copy is the
// parent's time, a teardown the exiting child's.
static int64_t CpuMicros(void) {
  int64_t total = 0;
  for (int who = 0; who < 2; ++who) {
    struct rusage ru;
    getrusage(who ? RUSAGE_CHILDREN : RUSAGE_SELF, &ru);
    total += (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
             ru.ru_stime.tv_usec;
  }
  return total;
}

// Today: the init is a fork of the image and forks the runner; the runner
// exits, the init reaps it and exits, the parent reaps the init.
static void Today(void) {
  pid_t init = (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
  if (init == 0) {
    pid_t runner = fork();
    if (runner == 0) _exit(0);
    int status;
    waitpid(runner, &status, 0);
    _exit(0);
  }
  int status;
  waitpid(init, &status, 0);
}

#ifndef __x86_64__
#error "the prototype's init makes its one system call in x86_64 assembly"
#endif
static long RawSyscall0(long n) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n) : "rcx", "r11", "memory");
  return ret;
}

static int LeanInitMain(void* arg) {
  (void)arg;
  for (;;) RawSyscall0(SYS_pause);  // killed by the parent; no libc (shared TLS)
  return 0;
}

static char g_init_stack[16384] __attribute__((aligned(64)));
static int g_own_pidns = -1;

// The design: the init shares the parent's memory; the parent forks the
// runner into the init's namespace, reaps it, kills the init and reaps it.
static void Lean(void) {
  pid_t init = clone(LeanInitMain, g_init_stack + sizeof g_init_stack,
                     CLONE_VM | CLONE_NEWPID | SIGCHLD, NULL);
  int pidfd = (int)syscall(SYS_pidfd_open, init, 0);
  if (init < 0 || pidfd < 0 || setns(pidfd, CLONE_NEWPID) != 0) {
    perror("clone/pidfd_open/setns");
    exit(1);
  }
  pid_t runner = fork();
  if (runner == 0) _exit(0);
  setns(g_own_pidns, CLONE_NEWPID);
  int status;
  waitpid(runner, &status, 0);
  kill(init, SIGKILL);
  waitpid(init, &status, 0);
  close(pidfd);
}

static void Measure(const char* name, void (*run)(void), long rounds, int64_t* took, int64_t* cpu) {
  for (long i = 0; i < rounds; ++i) {
    const int64_t c0 = CpuMicros(), t0 = NowMicros();
    run();
    took[i] = NowMicros() - t0;
    cpu[i] = CpuMicros() - c0;
    usleep(20000);
  }
  qsort(took, (size_t)rounds, sizeof *took, ByValue);
  int64_t sum = 0;
  for (long i = 0; i < rounds; ++i) sum += cpu[i];
  printf("\"%s\":{\"p50_us\":%lld,\"cpu_us_per_run\":%lld}", name, (long long)took[rounds / 2],
         (long long)(sum / rounds));
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MIB [ROUNDS]\n", argv[0]);
    return 2;
  }
  const long mib = strtol(argv[1], NULL, 10);
  const long rounds = argc > 2 ? strtol(argv[2], NULL, 10) : 40;
  if (mib <= 0 || rounds <= 0) return 2;
  if (!HoldImage(mib)) return 1;
  g_own_pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  int64_t* took = calloc((size_t)rounds, sizeof *took);
  int64_t* cpu = calloc((size_t)rounds, sizeof *cpu);
  printf("{\"mib\":%ld,\"rounds\":%ld,", mib, rounds);
  Measure("today", Today, rounds, took, cpu);
  printf(",");
  Measure("lean", Lean, rounds, took, cpu);
  printf("}\n");
  return 0;
}
