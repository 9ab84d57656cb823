#include "base/utf8.h"

#include <cstdint>

namespace mcpexec {
namespace {

// Length of the well-formed sequence starting at p (Unicode Table 3-7), or 0.
size_t WellFormedLength(const unsigned char* p, size_t avail) {
  unsigned char b0 = p[0];
  if (b0 < 0x80) return 1;
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < avail && p[i] >= lo && p[i] <= hi;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 == 0xE0) return cont(1, 0xA0, 0xBF) && cont(2) ? 3 : 0;
  if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (b0 == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (b0 == 0xF0) return cont(1, 0x90, 0xBF) && cont(2) && cont(3) ? 4 : 0;
  if (b0 >= 0xF1 && b0 <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b0 == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

uint32_t CodePoint(const unsigned char* p, size_t len) {
  if (len == 1) return p[0];
  uint32_t cp = p[0] & (0xFF >> (len + 1));
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (p[i] & 0x3F);
  return cp;
}

bool HidesText(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string EscapeName(std::string_view in) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(in.size());
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  size_t n = in.size(), i = 0;
  while (i < n) {
    size_t len = WellFormedLength(p + i, n - i);
    uint32_t cp = len ? CodePoint(p + i, len) : 0;
    if (len == 0 || (len == 1 && HidesText(cp))) {
      out += "\\x";
      out += kHex[p[i] >> 4];
      out += kHex[p[i] & 0xF];
      ++i;
      continue;
    }
    if (HidesText(cp)) {
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(cp >> shift) & 0xF];
    } else {
      out.append(in.data() + i, len);
    }
    i += len;
  }
  return out;
}

std::string RepairUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  size_t n = in.size(), i = 0;
  bool in_bad_run = false;
  while (i < n) {
    size_t len = WellFormedLength(p + i, n - i);
    if (len == 0) {
      if (!in_bad_run) out += "\xEF\xBF\xBD";
      in_bad_run = true;
      ++i;
      continue;
    }
    in_bad_run = false;
    out.append(in.data() + i, len);
    i += len;
  }
  return out;
}

bool IsValidUtf8(std::string_view in) { return RepairUtf8(in) == in; }

std::string_view Utf8Tail(std::string_view in, size_t max) {
  if (in.size() <= max) return in;
  std::string_view tail = in.substr(in.size() - max);
  size_t skip = 0;
  while (skip < tail.size() && skip < 3 &&
         (static_cast<unsigned char>(tail[skip]) & 0xC0) == 0x80) {
    ++skip;
  }
  return tail.substr(skip);
}

std::string UriPathEscape(std::string_view path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : path) {
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '/') {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += kHex[ch >> 4];
      out += kHex[ch & 0xF];
    }
  }
  return out;
}

}  // namespace mcpexec
