#pragma once

#include <string>
#include <string_view>

namespace mcpexec {

// Returns valid UTF-8: every maximal run of bytes that is not part of a
// well-formed sequence (overlong forms, surrogates, code points past
// U+10FFFF and cut sequences included) becomes one U+FFFD.
std::string RepairUtf8(std::string_view in);

// True when `in` is well-formed UTF-8 (RepairUtf8 would return it unchanged).
bool IsValidUtf8(std::string_view in);

// The last `max` bytes of `in`, starting on a character boundary (the
// continuation bytes of a character cut by the window are dropped).
std::string_view Utf8Tail(std::string_view in, size_t max);

}  // namespace mcpexec
