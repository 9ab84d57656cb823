// The seccomp layer: a default-deny allowlist for the native architecture,
// built once in the zygote with libseccomp and exported as BPF, then loaded
// with prctl() in each runner as the very last step of the lockdown.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

namespace mcpexec::sandbox::seccomp_policy {

// Zygote, before any fork: builds the policy and exports its BPF program.
// Returns false with *error set when libseccomp or the kernel refuses.
bool Prepare(std::vector<sock_filter>* program, std::string* error);

// Runner, last: loads the program (no_new_privs must already be set).
bool Apply(const std::vector<sock_filter>& program, std::string* error);

// For tests and doctor: the table, one line per syscall rule.
struct RuleDoc {
  std::string syscall;
  std::string action;  // "allow", "allow if ...", "errno EPERM", "kill"
  std::string why;
};
std::vector<RuleDoc> Describe();

}  // namespace mcpexec::sandbox::seccomp_policy
