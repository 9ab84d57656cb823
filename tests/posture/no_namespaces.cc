// Runs a command the way Docker's default seccomp profile would let it run
// without CAP_SYS_ADMIN: clone() with any namespace flag, unshare() and
// setns() fail with EPERM. The tests use it to put mcp-exec in the posture
// where it gets no namespace at all and must contain runs by uid,
// no_new_privs, rlimits, Landlock and seccomp alone.
// Usage: no-namespaces COMMAND [ARGS...]
#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <initializer_list>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s COMMAND [ARGS...]\n", argv[0]);
    return 2;
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    fprintf(stderr, "no-namespaces: seccomp_init failed\n");
    return 1;
  }
  // One rule per flag: any namespace flag is refused.
  for (uint64_t flag : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                        CLONE_NEWPID, CLONE_NEWNET}) {
    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                     SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
  }
  seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0);
  seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 0);
  seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || seccomp_load(ctx) != 0) {
    perror("no-namespaces: loading the filter");
    return 1;
  }
  seccomp_release(ctx);
  execvp(argv[1], argv + 1);
  perror("no-namespaces: exec");
  return 127;
}
