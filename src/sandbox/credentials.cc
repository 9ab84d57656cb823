#include "sandbox/credentials.h"

#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace mcpexec::sandbox::credentials {
namespace {

int LastCap() {
  std::ifstream f("/proc/sys/kernel/cap_last_cap");
  int n = 40;
  f >> n;
  return n;
}

std::string Err(const std::string& call) { return call + ": " + strerror(errno); }

}  // namespace

bool ApplyInRunner(const RunLimits& l, pid_t zygote_pid, std::string* error) {
  // The bounding set first: dropping needs CAP_SETPCAP, which setresuid
  // below takes away.
  for (int cap = 0; cap <= LastCap(); ++cap) {
    if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 1) continue;  // not in the set
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
    // Without CAP_SETPCAP (a server started with no capabilities) the set
    // cannot shrink; it only matters for exec of file-capability binaries,
    // which no_new_privs below neutralises.
    if (errno == EPERM) continue;
    *error = Err("prctl(PR_CAPBSET_DROP, " + std::to_string(cap) + ")");
    return false;
  }
  if (geteuid() == 0) {
    if (setgroups(0, nullptr) != 0) return *error = Err("setgroups(0, NULL)"), false;
    if (setresgid(l.sandbox_gid, l.sandbox_gid, l.sandbox_gid) != 0) {
      return *error = Err("setresgid(" + std::to_string(l.sandbox_gid) + ")"), false;
    }
    if (setresuid(l.sandbox_uid, l.sandbox_uid, l.sandbox_uid) != 0) {
      return *error = Err("setresuid(" + std::to_string(l.sandbox_uid) + ")"), false;
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return *error = Err("prctl(PR_CAP_AMBIENT_CLEAR_ALL)"), false;
  }
  // In a user namespace the zygote's capabilities survive the uid (which
  // does not change): clear them explicitly.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) != 0) return *error = Err("capset(all zero)"), false;
  // A credential change clears the parent-death signal: set it again.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return *error = Err("prctl(PR_SET_PDEATHSIG)"), false;
  if (getppid() != zygote_pid) {
    *error = "the zygote died during the lockdown";
    return false;
  }
  // Other processes of the same uid may not read our /proc files or ptrace us.
  if (prctl(PR_SET_DUMPABLE, 0) != 0) return *error = Err("prctl(PR_SET_DUMPABLE, 0)"), false;
  return true;
}

void DropEverything() {
  for (int cap = 0; cap < 64; ++cap) {
    if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1) (void)prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  }
  (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  (void)syscall(SYS_capset, &header, data);
  (void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

bool ApplyNoNewPrivs(std::string* error) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *error = Err("prctl(PR_SET_NO_NEW_PRIVS, 1)");
    return false;
  }
  return true;
}

}  // namespace mcpexec::sandbox::credentials
