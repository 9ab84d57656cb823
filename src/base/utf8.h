#pragma once

#include <string>
#include <string_view>

namespace mcpexec {

// The bytes of a character as a JSON string holds it (nlohmann's
// escaping): two for \" \\ \b \f \n \r \t, six for other control bytes.
inline size_t JsonEscapedBytes(unsigned char ch) {
  if (ch == '"' || ch == '\\' || ch == '\b' || ch == '\f' || ch == '\n' || ch == '\r' ||
      ch == '\t') {
    return 2;
  }
  return ch < 0x20 ? 6 : 1;
}

// Returns valid UTF-8: every maximal run of bytes that is not part of a
// well-formed sequence (overlong forms, surrogates, code points past
// U+10FFFF and cut sequences included) becomes one U+FFFD.
std::string RepairUtf8(std::string_view in);

// True when `in` is well-formed UTF-8 (RepairUtf8 would return it unchanged).
bool IsValidUtf8(std::string_view in);

// The last `max` bytes of `in`, starting on a character boundary (the
// continuation bytes of a character cut by the window are dropped).
std::string_view Utf8Tail(std::string_view in, size_t max);

// A name (a file's, as a run made it) made safe to show and to log: bytes
// that are not well-formed UTF-8 become \xNN, control characters (C0, DEL,
// C1) \xNN or \uNNNN, and the characters that reorder or hide text (bidi
// controls and marks, U+2028/U+2029) \uNNNN. Anything else is kept.
std::string EscapeName(std::string_view in);

// A path as a URI's path (RFC 3986): every byte but the unreserved ones and
// the slashes percent-encoded, so that it decodes to the path and to nothing
// else (a name holding %2e%2e%2f, ?, #, spaces or newlines).
std::string UriPathEscape(std::string_view path);

}  // namespace mcpexec
