// Code mode's tool channel (ipc::kTools): a stream socket pair between the
// run (python_runtime/mcp_exec_runtime/tools.py) and the supervisor
// (supervisor/tool_channel.cc). Every frame, both ways, is one field
// (ipc/frame.h: a little-endian u32 length, then that many bytes of JSON):
//
//   run -> supervisor: {"id": N, "op": "list"}
//                    | {"id": N, "op": "call", "server": S, "tool": T,
//                       "arguments": {...}}
//   supervisor -> run: {"id": N, "ok": true, "value": ...}
//                    | {"id": N, "ok": false, "kind": K, "error": "..."}
//
// K is "tool" (the upstream's error), "limit" (a bound of the run's) or
// "refused" (not allowed, malformed). A last frame with id null says why
// the supervisor ends the channel. The bounds (frame size, frames and
// bytes per run) are the supervisor's: supervisor/tool_channel.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ipc/frame.h"

namespace mcpexec::ipc {

// A frame ready to write: the JSON (never a strict dump: it may quote a
// run's bytes, which need not be UTF-8) as one field.
inline std::string ToolFrame(const nlohmann::json& message) {
  std::string frame;
  AppendField(&frame, message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return frame;
}

}  // namespace mcpexec::ipc
