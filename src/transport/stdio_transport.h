// MCP over stdio: newline-delimited JSON-RPC on stdin/stdout. stdout carries
// protocol messages only. EOF on stdin or a termination signal ends every
// run of the session and returns 0.
#pragma once

#include "model/config.h"
#include "protocol/mcp_session.h"

namespace mcpexec {

// signal_fd: a signalfd for SIGTERM/SIGINT/SIGHUP (blocked in every thread).
int ServeStdio(Server& server, const Config& config, int in_fd, int out_fd, int signal_fd,
               CallPool* pool = nullptr);

}  // namespace mcpexec
