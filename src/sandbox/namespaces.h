// The namespaces layer. The zygote is started by the supervisor inside new
// pid, network, mount, ipc and uts namespaces (and a user namespace when the
// server is not root): made once, they cost nothing per run. It is pid 1 of
// its pid namespace, so the supervisor is invisible to every run and the
// whole namespace dies with the zygote. Each runner then gets its own mount
// and ipc namespaces.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "sandbox/layers.h"

namespace mcpexec::sandbox::namespaces {

// Supervisor: clone()s with these CLONE_NEW* flags and execs path, with
// fds[0..nfds) as fds 3, 4, ... (a -1 leaves its number closed) and /dev/null on 0 and 1.
// Async-signal-safe between clone and exec, so it may be called from a threaded process. -1 (errno)
// when the host refuses the flags.
pid_t SpawnWithFlags(int flags, const char* path, char* const argv[], char* const envp[],
                     const int* fds, int nfds);

// The flag sets to try for the zygote, most isolating first.
std::vector<int> FlagSets();

std::string FlagNames(int flags);  // "user,pid,net,mount,ipc,uts"
int ParseFlagNames(const std::string& names);

// Zygote, first thing: maps ids in a new user namespace, makes mounts
// private, mounts a /proc for the new pid namespace. Returns false (with
// *error) when the namespaces cannot be finished; the supervisor then tries
// the next flag set.
bool FinishInZygote(int flags, uid_t outer_uid, gid_t outer_gid, std::string* error);

// Runner: its own mount and ipc namespaces (and network namespace when
// netns), when the zygote has them.
bool ApplyInRunner(int zygote_flags, bool netns, std::string* error);

// Zygote: whether each runner can have a pid namespace (the zygote
// unshares one before each fork: the runner's first process is its init)
// and a network namespace of its own. Tried in a throw-away child.
bool ProbeRunNamespaces(int zygote_flags, bool* pidns, bool* netns);

void Report(int flags, bool run_pidns, bool run_netns, std::vector<LayerStatus>* layers);

}  // namespace mcpexec::sandbox::namespaces
