// The server binary the integration tests drive: the one built with them
// (MCP_EXEC_BIN), or another build of the same source named by the
// environment variable MCP_EXEC_TEST_BIN (the sanitizer leg runs these
// tests against its ASan + UBSan build, scripts/sanitize.sh).
#pragma once

#include <cstdlib>
#include <string>

namespace mcpexec::testing {

inline std::string ServerBinary() {
  const char* other = std::getenv("MCP_EXEC_TEST_BIN");
  return other != nullptr && *other != '\0' ? other : MCP_EXEC_BIN;
}

}  // namespace mcpexec::testing
