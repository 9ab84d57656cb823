// The fork floor F of the one-shot goal: the time a process as large as the
// zygote takes to fork, have its child exit at once, and reap it. Nothing a
// one-shot call can do costs less on this machine, so the bench prints the
// call's time above a session's against it, in the same run (the VM's page
// tables make the absolute figure drift from day to day).
//
//   cc -O2 -o fork_floor bench/fork_floor.c
//   fork_floor MIB [ROUNDS] [DIRTY_PAGES]
//
// MIB: the resident size to hold (the zygote's RSS), in ordinary 4 KiB pages
// written once. DIRTY_PAGES: pages the child writes before it exits (each a
// copy-on-write fault), 0 for the floor itself. Prints one JSON line:
// {"mib":..,"rounds":..,"dirty_pages":..,"p10_us":..,"p50_us":..,"p90_us":..}
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "image.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MIB [ROUNDS] [DIRTY_PAGES]\n", argv[0]);
    return 2;
  }
  const long mib = strtol(argv[1], NULL, 10);
  const long rounds = argc > 2 ? strtol(argv[2], NULL, 10) : 50;
  const long dirty = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
  const size_t bytes = (size_t)mib << 20;
  const long page = sysconf(_SC_PAGESIZE);
  if (mib <= 0 || rounds <= 0 || dirty < 0 || (size_t)dirty * page > bytes) {
    fprintf(stderr, "%s: MIB and ROUNDS must be positive, DIRTY_PAGES within MIB\n", argv[0]);
    return 2;
  }
  char* mem = HoldImage(mib);
  if (!mem) return 1;
  int64_t* took = calloc((size_t)rounds, sizeof *took);
  for (long i = 0; i < rounds; ++i) {
    const int64_t t0 = NowMicros();
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return 1;
    }
    if (pid == 0) {
      for (long p = 0; p < dirty; ++p) mem[(size_t)p * page] = 2;
      _exit(0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
    }
    took[i] = NowMicros() - t0;
    usleep(20000);  // as a spaced call: the CPU's caches and the zygote's pages settle
  }
  qsort(took, (size_t)rounds, sizeof *took, ByValue);
  printf(
      "{\"mib\":%ld,\"rounds\":%ld,\"dirty_pages\":%ld,\"p10_us\":%lld,\"p50_us\":%lld,"
      "\"p90_us\":%lld}\n",
      mib, rounds, dirty, (long long)took[rounds / 10], (long long)took[rounds / 2],
      (long long)took[rounds * 9 / 10]);
  return 0;
}
