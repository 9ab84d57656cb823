// What the two fork programs of the bench share (fork_floor.c,
// lean_init.c): a clock, a sort order, and the image they fork, a region as
// large as the zygote in ordinary 4 KiB pages, written once.
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static inline int64_t NowMicros(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static inline int ByValue(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

// MIB of resident memory, or NULL (and why, on stderr).
static inline char* HoldImage(long mib) {
  const size_t bytes = (size_t)mib << 20;
  char* mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    perror("mmap");
    return NULL;
  }
  madvise(mem, bytes, MADV_NOHUGEPAGE);  // ordinary pages, as most of a process
  memset(mem, 1, bytes);
  return mem;
}
