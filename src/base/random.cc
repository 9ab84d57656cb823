#include "base/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "base/base64.h"

namespace mcpexec {

void RandomBytes(void* buf, size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  while (n > 0) {
    ssize_t got = getrandom(p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) abort();
    p += got;
    n -= static_cast<size_t>(got);
  }
}

std::string RandomToken(size_t n) {
  std::string bytes(n, '\0');
  RandomBytes(bytes.data(), n);
  std::string token = Base64Encode(bytes);
  while (!token.empty() && token.back() == '=') token.pop_back();
  for (char& c : token) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return token;
}

}  // namespace mcpexec
