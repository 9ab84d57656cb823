#pragma once

#include <string>
#include <string_view>

namespace mcpexec {

// Returns valid UTF-8: every maximal run of bytes that is not part of a
// well-formed sequence (overlong forms, surrogates, code points past
// U+10FFFF and cut sequences included) becomes one U+FFFD.
std::string RepairUtf8(std::string_view in);

}  // namespace mcpexec
