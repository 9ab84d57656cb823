// An upstream -> the supervisor, code mode: byte 0 picks the framing, byte 1
// the size of the pieces the rest arrives in (1 to 256 bytes):
//   even: an upstream's stdout, newline-delimited messages (LineFramer);
//   odd:  a server-sent event stream's bytes (EventStream).
// Each line or event goes through ParseMessage as the client does. Checked:
// the framers hand out exactly the lines and events in the bytes, none
// longer than the bound; a message too deep to read but with an id comes
// back as a JSON-RPC error under that id; nothing recurses or leaks.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "upstream/framing.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz_upstream_framing: %s\n", what);
  abort();
}

void Check(std::string_view message) {
  const nlohmann::json m = mcpexec::upstream::ParseMessage(message);
  if (m.is_discarded()) return;
  // Whatever came back can be dumped and compared: it is bounded.
  const std::string again = m.dump();
  if (m.is_object() && m.contains("error") && m["error"].is_object() &&
      m["error"].value("message", "").find("deeper than 64 levels") != std::string::npos &&
      !mcpexec::upstream::IsResponse(m)) {
    Fail("a too-deep message's error is not a response");
  }
  (void)again;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const bool events = (data[0] & 1) != 0;
  const size_t piece = 1 + data[1];
  const char* bytes = reinterpret_cast<const char*>(data + 2);
  const size_t n = size - 2;
  size_t lines_seen = 0, newlines = 0;
  for (size_t i = 0; i < n; ++i) newlines += bytes[i] == '\n';
  mcpexec::upstream::LineFramer lines;
  mcpexec::upstream::EventStream stream;
  for (size_t at = 0; at < n; at += piece) {
    const size_t len = std::min(piece, n - at);
    bool ok;
    if (events) {
      ok = stream.Feed(bytes + at, len, [&](std::string_view event) {
        if (event.size() > mcpexec::upstream::kMaxMessage) Fail("an event past the bound");
        Check(event);
      });
    } else {
      ok = lines.Feed(bytes + at, len, [&](std::string_view line) {
        if (line.find('\n') != std::string_view::npos) Fail("a line holds a newline");
        ++lines_seen;
        Check(line);
      });
    }
    if (!ok) Fail("a bound passed by an input of at most max_len bytes");
  }
  if (!events && lines_seen != newlines) Fail("lines lost or invented");
  return 0;
}
