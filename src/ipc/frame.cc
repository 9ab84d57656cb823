#include "ipc/frame.h"

namespace mcpexec::ipc {

uint32_t LoadU32LE(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
}

void AppendU32LE(std::string* out, uint32_t v) {
  const char b[kU32Bytes] = {static_cast<char>(v & 0xff), static_cast<char>((v >> 8) & 0xff),
                             static_cast<char>((v >> 16) & 0xff),
                             static_cast<char>((v >> 24) & 0xff)};
  out->append(b, kU32Bytes);
}

void AppendField(std::string* out, std::string_view bytes) {
  AppendU32LE(out, static_cast<uint32_t>(bytes.size()));
  out->append(bytes);
}

bool ReadU32(std::string_view in, size_t* pos, uint32_t* v) {
  if (*pos > in.size() || in.size() - *pos < kU32Bytes) return false;
  *v = LoadU32LE(in.data() + *pos);
  *pos += kU32Bytes;
  return true;
}

bool ReadField(std::string_view in, size_t* pos, std::string* out) {
  size_t at = *pos;
  uint32_t n = 0;
  if (!ReadU32(in, &at, &n) || in.size() - at < n) return false;
  out->assign(in.data() + at, n);
  *pos = at + n;
  return true;
}

}  // namespace mcpexec::ipc
