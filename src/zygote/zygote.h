// The zygote: a single-threaded process that embeds CPython, imports and warms
// the sandbox's packages once, then forks one runner per request. It is the
// supervisor's own binary started as `mcp-exec __zygote` over a socketpair, so
// it begins life with an explicit, empty environment and no threads.
#pragma once

namespace mcpexec {

// argv: as ZygoteArgs::ToArgv() writes it (ipc/zygote_args.h); the
// control socket is fd kZygoteControlFd.
int ZygoteMain(int argc, char** argv);

}  // namespace mcpexec
