// The server on streamable HTTP (or legacy SSE) at 127.0.0.1, as a GoogleTest
// fixture: start it, talk to it with cpp-httplib or a raw socket, read its
// metrics, stop it with SIGTERM. Shared by the HTTP tests and the chaos tests.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <string>

#include "server_process.h"

namespace mcpexec::testing {

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreePort();
// Writes all of s; false once the peer is gone (no SIGPIPE).
bool SendAll(int fd, const std::string& s);

extern const httplib::Headers kMcpHeaders;
// An initialize request (id 1) of a client named "integration-test".
extern const char* const kInit;

class HttpServerTest : public ::testing::Test {
 protected:
  // Starts the server on a free port and waits until /readyz says 200. An
  // MCP_EXEC_AUTH_TOKEN in env is sent with every request of Client().
  // wrapper: a command the server runs under (ServerProcess's).
  void Start(Env env = {}, const std::string& transport = "http",
             const std::vector<std::string>& wrapper = {});
  httplib::Client Client();
  // h plus the token, if the server has one.
  httplib::Headers With(httplib::Headers h);
  // The MCP headers plus the session's id.
  httplib::Headers Session(const std::string& sid);
  // initialize and notifications/initialized; returns the session id.
  std::string Initialize();
  // The JSON-RPC message in a JSON or event-stream answer.
  static json Message(const std::string& body);
  // A plain TCP connection to the server, for what the HTTP client cannot do.
  // source: the local address to connect from (any of 127.0.0.0/8 is this
  // host), so that one test can play several clients. -1 on failure.
  int ConnectRaw(const char* source = nullptr);
  // The value of a metric line in /metrics, or -1.
  long Metric(const std::string& name);
  // A server still running gets SIGTERM and must exit 0.
  void TearDown() override;

  int port_ = 0;
  std::string token_;
  std::unique_ptr<ServerProcess> server_;
};

}  // namespace mcpexec::testing
