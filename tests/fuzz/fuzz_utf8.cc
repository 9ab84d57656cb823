// UTF-8 repair and tails: the input is a run's output as raw bytes. The
// first two bytes choose the tail window (MCP_EXEC_TAIL_BYTES); the rest is
// the stream. Checked: RepairUtf8 returns valid UTF-8 (as nlohmann's strict
// serializer judges it), keeps valid input unchanged and is idempotent;
// IsValidUtf8 agrees with the serializer; Utf8Tail is a suffix within the
// window that starts on a character boundary; and a result holding these
// bytes (streams, tails, result, an out/ file) serializes strictly, as
// ToolResult does.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/base64.h"
#include "base/utf8.h"
#include "tool/contract.h"

namespace {

using json = nlohmann::json;

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz_utf8: %s\n", what);
  abort();
}

// nlohmann's own UTF-8 check: dump() throws on an invalid string.
bool SerializerAccepts(const std::string& s) {
  try {
    (void)json(s).dump();
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

void CheckRepair(std::string_view in) {
  const std::string repaired = mcpexec::RepairUtf8(in);
  const bool valid = mcpexec::IsValidUtf8(in);
  if (valid != SerializerAccepts(std::string(in))) Fail("IsValidUtf8 disagrees with nlohmann");
  if (valid && repaired != in) Fail("valid input changed");
  if (!SerializerAccepts(repaired)) Fail("RepairUtf8 returned invalid UTF-8");
  if (mcpexec::RepairUtf8(repaired) != repaired) Fail("RepairUtf8 is not idempotent");
  // Each invalid byte costs at most one U+FFFD (3 bytes).
  if (repaired.size() > 3 * in.size()) Fail("RepairUtf8 grew too much");
}

void CheckTail(std::string_view in, size_t max) {
  const std::string_view tail = mcpexec::Utf8Tail(in, max);
  if (tail.size() > max && tail.size() != in.size()) Fail("tail longer than its window");
  if (in.substr(in.size() - tail.size()) != tail) Fail("tail is not a suffix");
  if (in.size() <= max) {
    if (tail != in) Fail("a stream within the window was cut");
    return;
  }
  if (tail.size() + 3 < max) Fail("tail dropped more than one cut character");
  // A tail of valid text is valid text: the cut character is gone whole.
  if (mcpexec::IsValidUtf8(in) && !mcpexec::IsValidUtf8(tail)) Fail("tail cut a character");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return -1;
  const size_t max = static_cast<size_t>(data[0]) | (static_cast<size_t>(data[1] & 0x0f) << 8);
  const std::string_view in(reinterpret_cast<const char*>(data + 2), size - 2);
  CheckRepair(in);
  CheckTail(in, max);

  // The result of a run whose output, tails, last value and out/ file are
  // these bytes, as the tool answers it.
  mcpexec::ExecResult r;
  r.stdout_data = std::string(in);
  r.stderr_data = std::string(in.substr(in.size() / 2));
  r.stdout_lost = r.stderr_lost = true;
  r.stdout_tail = std::string(mcpexec::Utf8Tail(in, max));
  r.stderr_tail = std::string(mcpexec::Utf8Tail(r.stderr_data, max));
  r.has_result = true;
  r.result = std::string(in);
  r.files.push_back({"out/data.bin", "", std::string(in)});
  const json result = mcpexec::ToolResult(r);
  (void)result.dump();  // strict: throws on any invalid UTF-8 left
  // The file comes back whole: as text when that is valid UTF-8 and costs no
  // more than base64 once escaped, else as a blob; either way its bytes.
  const json& resource = result["content"][1]["resource"];
  if (resource.contains("text")) {
    if (!mcpexec::IsValidUtf8(in) || resource["text"].get<std::string>() != in) {
      Fail("a file's text is not its bytes");
    }
  } else if (mcpexec::Base64Decode(resource["blob"].get<std::string>()) != std::string(in)) {
    Fail("a file's blob is not its bytes");
  }
  return 0;
}
