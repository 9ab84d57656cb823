// An upstream over streamable HTTP -> the supervisor: the input is the
// whole HTTP/1.1 response an upstream sends to a POST (the head, then a
// body by Content-Length, chunked, or to EOF; JSON or an event stream),
// read from a file descriptor by the real BodyReader as HttpLink reads it,
// then ReadBody and ParseMessage, or ResponseEvent waiting for id 1.
// Checked: the head and the body keep to their bounds, an answer that comes
// back is a JSON-RPC response with id 1 (or the plain body's message), and
// nothing hangs (the descriptor ends at the input's end), recurses or leaks.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/unique_fd.h"
#include "upstream/framing.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz_upstream_http: %s\n", what);
  abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcpexec::upstream;
  mcpexec::UniqueFd fd(memfd_create("fuzz-upstream-http", MFD_CLOEXEC));
  if (!fd) Fail("memfd_create");
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd.get(), data + done, size - done);
    if (n <= 0) Fail("write");
    done += static_cast<size_t>(n);
  }
  lseek(fd.get(), 0, SEEK_SET);
  BodyReader reader(fd.get(), Clock::now() + std::chrono::seconds(5));
  Response r;
  std::string error;
  if (!reader.Head(&r, &error)) {
    if (error.empty()) Fail("a refused head without a reason");
    return 0;
  }
  std::string type = r.headers["content-type"];
  if (type.find("text/event-stream") != std::string::npos) {
    auto answer = ResponseEvent(reader, 1, &error);
    if (answer && (!IsResponse(*answer) || (*answer)["id"] != 1)) Fail("a wrong answer");
    if (!answer && error.empty()) Fail("no answer and no reason");
    return 0;
  }
  std::string body;
  if (!ReadBody(reader, &body, &error)) return 0;
  if (body.size() > size) Fail("a body longer than the bytes that came");
  const nlohmann::json m = ParseMessage(body);
  if (!m.is_discarded()) (void)m.dump();
  return 0;
}
