// Unguessable bytes from the kernel (getrandom), for the ids that are
// capabilities: HTTP session ids and Python session handles.
#pragma once

#include <cstddef>
#include <string>

namespace mcpexec {

// Fills buf with n random bytes; aborts if the kernel cannot (an id that
// could be guessed is worse than no server).
void RandomBytes(void* buf, size_t n);

// n random bytes as URL-safe base64 without padding ([A-Za-z0-9_-]).
std::string RandomToken(size_t n);

}  // namespace mcpexec
