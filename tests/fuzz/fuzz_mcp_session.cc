// A whole stdio session fed arbitrary bytes: the input is what the client
// writes on the server's stdin, read by the real ServeStdio (its line
// framing, the oversized-line cap) into the real McpSession, until EOF ends
// the session (every call still running is answered, as at shutdown).
// Checked: every line the server writes is one JSON-RPC 2.0 object.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "base/log.h"
#include "fuzz_backend.h"
#include "model/config.h"
#include "transport/stdio_transport.h"

namespace {

using json = nlohmann::json;

// A memfd: reads return what was written then EOF, writes never block.
int MemFile(const char* name) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) abort();
  return fd;
}

void WriteAll(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n <= 0) abort();
    data += n;
    size -= static_cast<size_t>(n);
  }
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  if (lseek(fd, 0, SEEK_SET) != 0) abort();
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

void CheckOutput(const std::string& out) {
  if (!out.empty() && out.back() != '\n') {
    fprintf(stderr, "the output does not end with a newline\n");
    abort();
  }
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    const std::string line = out.substr(start, end - start);
    json msg = json::parse(line, nullptr, false);
    if (!msg.is_object() || msg.value("jsonrpc", json()) != "2.0") {
      fprintf(stderr, "not a JSON-RPC message on stdout: %s\n", line.c_str());
      abort();
    }
    start = end + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mcpexec::log::SetLevel("error");  // the log goes to stderr: only what is wrong
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mcpexec::Config config;
  // A cap an input can pass: the oversized-line path is fuzzed too.
  config.max_request_bytes = 16384;
  config.max_in_files = 4;
  config.max_in_bytes = 4096;
  // No wait at stdin's end: the fuzz backend's calls end only when
  // released or cancelled, and the end of the input is the end of the test
  // (the piped-stdio grace is the integration tests' to cover).
  config.shutdown_grace_s = 0;
  mcpexec::fuzz::FuzzBackend backend(config);
  mcpexec::Server server(backend);
  int in = MemFile("fuzz-stdin"), out = MemFile("fuzz-stdout");
  WriteAll(in, data, size);
  if (lseek(in, 0, SEEK_SET) != 0) abort();
  if (mcpexec::ServeStdio(server, config, in, out, -1) != 0) abort();
  CheckOutput(ReadAll(out));
  close(in);
  close(out);
  return 0;
}
