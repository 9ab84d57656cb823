// The results pipe (runner -> supervisor, ipc::kResults): the records the
// runtime writes (python_runtime/mcp_exec_runtime/results.py) and the
// supervisor reads under its bounds (supervisor/results.cc).
//
//   u32 head length, u32 body length   (ipc/frame.h: little-endian)
//   head: a JSON object naming its "kind": "image" (body: the PNG),
//         "file" (an out/ file: body its bytes; with "link": true the
//         body is streamed to the resource store), "result" (the last
//         expression's value), "images_omitted", "files_omitted"
//   body
//
// The prefix alone says where the next record starts, so a head that does
// not parse, or is past kMaxRecordHeadBytes, costs only its own record.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ipc/frame.h"

namespace mcpexec::ipc {

inline constexpr size_t kRecordPrefixBytes = 2 * kU32Bytes;
// A head past this is skipped unread (its body too).
inline constexpr uint32_t kMaxRecordHeadBytes = 64 * 1024;

struct RecordPrefix {
  uint32_t head_bytes;
  uint32_t body_bytes;
};
// The prefix at p (kRecordPrefixBytes readable).
inline RecordPrefix LoadRecordPrefix(const char* p) {
  return {LoadU32LE(p), LoadU32LE(p + kU32Bytes)};
}

}  // namespace mcpexec::ipc
