// An upstream over streamable HTTP -> the supervisor: the input is the
// whole HTTP/1.1 response an upstream sends to a POST (the head, then a
// body by Content-Length, chunked, or to EOF; JSON or an event stream),
// written into one end of a socketpair and read from the other by
// ReadAnswerFrom, which is what HttpLink's POST reads with (Beast's parser
// under the link's bounds, then the plain body or the event stream waiting
// for id 1). Checked: an answer that comes back is a JSON-RPC response, with
// id 1 when the status is 2xx; a refusal says why; nothing hangs (the
// writer shuts its end at the input's end), recurses or leaks.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "base/unique_fd.h"
#include "upstream/framing.h"
#include "upstream/http_link.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz_upstream_http: %s\n", what);
  abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcpexec::upstream;
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) Fail("socketpair");
  mcpexec::UniqueFd reader_end(pair[0]), writer_end(pair[1]);
  // The reader may stop before the input's end (a bound, a bad head): the
  // writer then meets a closed socket (MSG_NOSIGNAL: an error, not SIGPIPE).
  std::thread writer([&] {
    size_t done = 0;
    while (done < size) {
      ssize_t n = send(writer_end.get(), data + done, size - done, MSG_NOSIGNAL);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    shutdown(writer_end.get(), SHUT_WR);
  });
  const nlohmann::json request = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}};
  AnswerHead head;
  std::string error;
  std::optional<nlohmann::json> answer = ReadAnswerFrom(
      reader_end.get(), request, Clock::now() + std::chrono::seconds(5), &head, &error);
  reader_end.Reset();  // a writer still sending fails now
  writer.join();
  if (answer) {
    if (!IsResponse(*answer)) Fail("an answer that is not a JSON-RPC response");
    if (head.status / 100 == 2 && (*answer)["id"] != 1) Fail("an answer to another request");
    (void)answer->dump();
  } else if (error.empty()) {
    Fail("no answer and no reason");
  }
  return 0;
}
