#include "http_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace mcpexec::testing {

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

bool SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

const httplib::Headers kMcpHeaders = {{"Accept", "application/json, text/event-stream"}};
const char* const kInit =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"integration-test","version":"1"}}})";

void HttpServerTest::Start(Env env, const std::string& transport,
                           const std::vector<std::string>& wrapper) {
  env["MCP_EXEC_TRANSPORT"] = transport;
  token_ = env.count("MCP_EXEC_AUTH_TOKEN") ? env["MCP_EXEC_AUTH_TOKEN"] : "";
  // The port FreePort found may be taken again before the server binds it
  // (a test process side by side, a client's local port): the server then
  // ends with listen_failed, and it starts again on another. Ready means
  // this server listens (its own log says so), never that something on
  // the port answers.
  for (int attempt = 1;; ++attempt) {
    port_ = FreePort();
    env["MCP_EXEC_ADDR"] = "127.0.0.1:" + std::to_string(port_);
    server_ = std::make_unique<ServerProcess>(env, std::vector<std::string>{}, wrapper);
    const bool ready = WaitUntil(
        [&] {
          if (server_->Wait(0) != -1) return true;
          auto r = Client().Get("/readyz");
          return r && r->status == 200 && server_->StderrHas("\"event\":\"listening\"", 0);
        },
        60000);
    if (ready && server_->Wait(0) == -1) return;
    const bool port_taken = server_->Stderr().find("\"listen_failed\"") != std::string::npos;
    ASSERT_TRUE(port_taken && attempt < 5)
        << "the server did not get ready (attempt " << attempt << "): " << server_->Stderr();
  }
}

httplib::Client HttpServerTest::Client() {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(60);
  if (!token_.empty()) c.set_default_headers({{"X-MCP-AUTH", token_}});
  return c;
}

httplib::Headers HttpServerTest::With(httplib::Headers h) {
  if (!token_.empty()) h.emplace("X-MCP-AUTH", token_);
  return h;
}

httplib::Headers HttpServerTest::Session(const std::string& sid) {
  httplib::Headers h = kMcpHeaders;
  h.emplace("Mcp-Session-Id", sid);
  return h;
}

std::string HttpServerTest::Initialize() {
  auto r = Client().Post("/mcp", With(kMcpHeaders), kInit, "application/json");
  EXPECT_TRUE(r);
  if (!r) return "";
  EXPECT_EQ(r->status, 200) << r->body;
  std::string sid = r->get_header_value("Mcp-Session-Id");
  EXPECT_FALSE(sid.empty());
  auto n = Client().Post("/mcp", With(Session(sid)),
                         R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                         "application/json");
  EXPECT_EQ(n ? n->status : 0, 202);
  return sid;
}

json HttpServerTest::Message(const std::string& body) {
  auto data = body.find("data: ");
  if (data == std::string::npos) return json::parse(body, nullptr, false);
  return json::parse(body.substr(data + 6, body.find('\n', data) - data - 6), nullptr, false);
}

int HttpServerTest::ConnectRaw(const char* source) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (source) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    inet_pton(AF_INET, source, &s.sin_addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&s), sizeof s) != 0) {
      close(fd);
      return -1;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

long HttpServerTest::Metric(const std::string& name) {
  auto m = Client().Get("/metrics");
  if (!m || m->status != 200) return -1;
  auto at = m->body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stol(m->body.substr(at + name.size() + 2));
}

void HttpServerTest::TearDown() {
  // An HTTP server ends on SIGTERM, not on stdin EOF, with status 0.
  // A server the test did not see end is told to end now and must exit 0:
  // one that crashed on its own fails here.
  if (server_ && !server_->exit_seen()) {
    kill(server_->pid(), SIGTERM);
    EXPECT_EQ(server_->Wait(30000), 0);
  }
}

}  // namespace mcpexec::testing
