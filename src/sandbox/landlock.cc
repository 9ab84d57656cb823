#include "sandbox/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <utility>

namespace mcpexec::sandbox::landlock {
namespace {

// Debian's kernel headers predate the newer ABIs: the values are the
// kernel's UAPI and never change.
constexpr uint64_t kFsV1 = (1ULL << 13) - 1;  // EXECUTE .. MAKE_SYM
constexpr uint64_t kFsRefer = 1ULL << 13;     // ABI 2
constexpr uint64_t kFsTruncate = 1ULL << 14;  // ABI 3
constexpr uint64_t kFsIoctlDev = 1ULL << 15;  // ABI 5
constexpr uint64_t kNetBindTcp = 1ULL << 0;   // ABI 4
constexpr uint64_t kNetConnectTcp = 1ULL << 1;
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0;  // ABI 6
constexpr uint64_t kScopeSignal = 1ULL << 1;
constexpr uint64_t kReadOnly =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;

struct RulesetAttr {  // struct landlock_ruleset_attr, ABI 6 layout
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct PathBeneathAttr {  // struct landlock_path_beneath_attr (packed)
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

constexpr int kRulePathBeneath = 1;

long CreateRuleset(const RulesetAttr* attr, size_t size, uint32_t flags) {
  return syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

uint64_t HandledFs(int abi) {
  uint64_t fs = kFsV1;
  if (abi >= 2) fs |= kFsRefer;
  if (abi >= 3) fs |= kFsTruncate;
  if (abi >= 5) fs |= kFsIoctlDev;
  return fs;
}

bool AddPath(int ruleset, const std::string& path, uint64_t access, std::string* error) {
  UniqueFd fd(open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return true;  // nothing there to allow
    *error = "open(" + path + ", O_PATH): " + strerror(errno);
    return false;
  }
  // A rule on a file may carry only the rights that apply to files.
  struct stat st;
  if (fstat(fd.get(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
              LANDLOCK_ACCESS_FS_READ_FILE | kFsTruncate | kFsIoctlDev;
  }
  PathBeneathAttr rule{access, fd.get()};
  if (syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0) != 0) {
    *error = "landlock_add_rule(" + path + "): " + strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

int ProbeAbi() {
  long abi = CreateRuleset(nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

UniqueFd Prepare(int abi, const Rules& rules, std::string* error) {
  if (abi < 1) {
    *error = "Landlock is not available";
    return UniqueFd();
  }
  uint64_t fs = HandledFs(abi);
  RulesetAttr attr{};
  attr.handled_access_fs = fs;
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;  // no rule: no TCP at all
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnix | kScopeSignal;
    size = sizeof attr;
  }
  UniqueFd ruleset(static_cast<int>(CreateRuleset(&attr, size, 0)));
  if (!ruleset) {
    *error = std::string("landlock_create_ruleset: ") + strerror(errno);
    return ruleset;
  }
  const int rs = ruleset.get();
  bool ok = true;
  for (const auto& dir : rules.readable) ok = ok && AddPath(rs, dir, kReadOnly, error);
  for (const auto& dir : rules.listable) {
    ok = ok && AddPath(rs, dir, LANDLOCK_ACCESS_FS_READ_DIR, error);
  }
  for (const auto& dir : rules.writable) ok = ok && AddPath(rs, dir, fs, error);
  for (const auto& g : rules.granted) {
    uint64_t access = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    if (g.exec) access |= LANDLOCK_ACCESS_FS_EXECUTE;
    if (g.write) {
      access |= LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |
                LANDLOCK_ACCESS_FS_MAKE_REG | (fs & (kFsRefer | kFsTruncate));
    }
    ok = ok && AddPath(rs, g.path, access, error);
  }
  uint64_t device_rw =
      LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? kFsTruncate : 0);
  for (const auto& dev : rules.devices) ok = ok && AddPath(rs, dev, device_rw, error);
  if (!ok) ruleset.Reset();
  return ruleset;
}

bool AddWritable(int abi, int ruleset, const std::string& dir, std::string* error) {
  return AddPath(ruleset, dir, HandledFs(abi), error);
}

bool Restrict(UniqueFd ruleset, std::string* error) {
  bool ok = syscall(SYS_landlock_restrict_self, ruleset.get(), 0) == 0;
  if (!ok) *error = std::string("landlock_restrict_self: ") + strerror(errno);
  return ok;
}

bool Apply(int abi, const Rules& rules, std::string* error) {
  UniqueFd ruleset = Prepare(abi, rules, error);
  return ruleset && Restrict(std::move(ruleset), error);
}

}  // namespace mcpexec::sandbox::landlock
