// The seccomp layer: a default-deny allowlist for the native architecture,
// built once in the zygote with libseccomp and exported as BPF, then loaded
// with prctl() in each runner as the very last step of the lockdown.
//
// The policy is data (seccomp_policy.cc): rows grouped by purpose, each with
// the reason the row exists, and one table of argument rules. The filter
// builder and Describe() (tests, doctor) both read those tables, so the prose
// cannot drift from the filter.
#pragma once

#include <linux/filter.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mcpexec::sandbox::seccomp_policy {

// Zygote, before any fork: builds the policy and exports its BPF program.
// Returns false with *error set when the table is inconsistent (an unknown
// syscall name, a row that would shadow an argument rule, ...) or when
// libseccomp or the kernel refuses.
bool Prepare(std::vector<sock_filter>* program, std::string* error);

// Runner, last: installs the SIGSYS handler that names a killed call (see
// Action::kKill), then loads the program (no_new_privs must already be set).
bool Apply(const std::vector<sock_filter>& program, std::string* error);

// For tests and doctor: the table, one line per syscall rule.
struct RuleDoc {
  std::string syscall;
  std::string action;  // "allow", "allow if ...", "errno EPERM", "kill"
  std::string why;
  std::string group;  // the row's group, or "argument rules"
};
std::vector<RuleDoc> Describe();

// --- The policy as data (exposed for tests) ---

enum class Action {
  kAllow,
  kErrnoEperm,   // the default action: such rows only document a decision
  kErrnoEnosys,  // "not implemented": the caller has a fallback
  // Nothing legitimate asks: the whole process dies. The filter traps the
  // call (SIGSYS, the call not made); the runner's handler writes which call
  // to the run's stderr and dies of SIGSYS. Code cannot replace that handler
  // (rt_sigaction on SIGSYS is refused), and a blocked or default SIGSYS
  // kills all the same.
  kKill,
};

// Whether a syscall exists on every architecture libseccomp knows. A row that
// names a syscall the native architecture lacks is a start-up error unless
// the row says why that is expected; a name libseccomp does not know at all
// is always an error.
enum class Presence {
  kEverywhere,
  kLegacy,   // an old form x86_64 keeps and newer ABIs (aarch64, riscv64)
             // dropped: glibc uses the *at, *2 or p* form there
  kX86Only,  // x86 hardware or ABI specific
};

struct Row {
  const char* syscalls;  // one or more names, separated by single spaces
  Action action;
  const char* why;  // who needs it (or why it is denied)
  Presence presence = Presence::kEverywhere;
};

struct Group {
  const char* title;
  std::span<const Row> rows;
};

// A number and the name it has in the kernel headers, for the description.
struct Named {
  uint64_t value = 0;
  const char* name = "";
};

// One comparison on one syscall argument: arg == value, or
// (arg & mask) == value.
struct Condition {
  enum class Op { kUnused, kEq, kMaskedEq };
  Op op = Op::kUnused;
  unsigned arg = 0;
  const char* arg_name = "";
  Named mask;  // kMaskedEq only
  Named value;
};

// Allows the syscall when every used condition holds. Several rules for the
// same syscall are alternatives; a call that matches none gets the default
// action (EPERM).
struct ArgRule {
  const char* syscall;
  std::array<Condition, 2> conditions;
  const char* why;
  Presence presence = Presence::kEverywhere;
};

struct Policy {
  std::span<const Group> groups;
  std::span<const ArgRule> arg_rules;
};

// The policy Prepare() builds.
const Policy& DefaultPolicy();

// The names in a row's syscalls field.
std::vector<std::string> SyscallNames(const Row& row);

// "arg0 (domain) == AF_UNIX and ...": the text Describe() shows for a rule.
std::string ConditionText(const ArgRule& rule);

// Checks the policy without libseccomp: every row and rule has a reason,
// every argument rule a condition, no syscall is in two rows, and no row
// names a syscall that has argument rules (an unconditional allow would
// shadow them; any other action would contradict them). Returns "" when
// consistent, else what is wrong.
std::string Check(const Policy& policy);

// Prepare() for any policy: Check(), then the names are resolved for the
// native architecture and the filter is built and exported.
bool Prepare(const Policy& policy, std::vector<sock_filter>* program, std::string* error);

}  // namespace mcpexec::sandbox::seccomp_policy
