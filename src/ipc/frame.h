// The one codec of the byte formats that cross a process boundary here:
// a little-endian u32, and a field (its length as that u32, then its
// bytes). The Python side's one implementation is
// python_runtime/mcp_exec_runtime/frames.py.
//
// The formats built on it, each documented in its own header:
// - ipc/run_bundle.h: the code and input files in the run's sealed memfd;
// - ipc/result_records.h: the runtime's records on the results pipe;
// - ipc/tool_frames.h: code mode's requests and answers on the tool channel.
// The fixed-size ones (ipc/control.h's headers, ipc/status.h's records)
// are structs in host byte order: both ends are this binary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mcpexec::ipc {

inline constexpr size_t kU32Bytes = 4;

// The little-endian u32 at p (kU32Bytes readable).
uint32_t LoadU32LE(const char* p);
void AppendU32LE(std::string* out, uint32_t v);

// A field: its length, then its bytes. The caller bounds `bytes` below
// 4 GiB (every format here has a far smaller bound).
void AppendField(std::string* out, std::string_view bytes);
// Reads a u32 or a field at *pos and moves past it; false (nothing moved)
// when `in` holds less than it says.
bool ReadU32(std::string_view in, size_t* pos, uint32_t* v);
bool ReadField(std::string_view in, size_t* pos, std::string* out);

}  // namespace mcpexec::ipc
