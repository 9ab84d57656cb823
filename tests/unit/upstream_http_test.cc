// HttpLink against a scripted HTTP server on 127.0.0.1: what a POST sends
// (the session's and the entry's headers), the answers it reads (JSON, an
// event stream in chunks), the session it forgets on 404, and its ends (the
// deadline, Abort, a refused connection, the head's bound, a wrong id).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "upstream/config.h"
#include "upstream/http_link.h"

namespace mcpexec::upstream {
namespace {

using nlohmann::json;

// Accepts connections one at a time, keeps each request it reads (head and
// body) and sends the next scripted reply; a reply of "" holds the
// connection open without a word until the test ends.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<std::string> replies) : replies_(std::move(replies)) {
    listener_.Reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), len), 0);
    EXPECT_EQ(listen(listener_.get(), 8), 0);
    getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    shutdown(listener_.get(), SHUT_RDWR);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : held_) shutdown(fd, SHUT_RDWR);
    }
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    for (const std::string& reply : replies_) {
      UniqueFd c(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c) return;
      std::string request = ReadRequest(c.get());
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(request);
        if (reply.empty()) held_.push_back(c.get());
      }
      if (reply.empty()) {
        char byte;
        (void)!read(c.get(), &byte, 1);  // until the client or the test ends it
        std::lock_guard<std::mutex> lock(mu_);
        held_.clear();
        continue;
      }
      (void)!send(c.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
    }
  }
  static std::string ReadRequest(int fd) {
    std::string in;
    char buf[4096];
    for (;;) {
      size_t head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        size_t at = in.find("Content-Length: ");
        size_t length = at == std::string::npos ? 0 : std::stoul(in.substr(at + 16));
        if (in.size() >= head_end + 4 + length) return in;
      }
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) return in;
      in.append(buf, static_cast<size_t>(n));
    }
  }

  std::vector<std::string> replies_;
  UniqueFd listener_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::vector<int> held_;
};

std::string JsonReply(const std::string& body, const std::string& extra = "",
                      const std::string& status = "200 OK") {
  return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

Spec HttpSpec(const std::string& url) {
  Spec s;
  s.name = "web";
  s.url = url;
  s.headers["Authorization"] = "Bearer secret-token";
  return s;
}

json Call(int64_t id, const std::string& tool = "echo") {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"name", tool}, {"arguments", json::object()}}}};
}

Clock::time_point In(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

TEST(UpstreamHttpTest, AJsonAnswerAndTheHeadersEveryPostCarries) {
  ScriptedServer server(
      {JsonReply(R"({"jsonrpc":"2.0","id":1,"result":{"n":1}})", "Mcp-Session-Id: s-42\r\n"),
       JsonReply(R"({"jsonrpc":"2.0","id":2,"result":{"n":2}})")});
  HttpLink link(HttpSpec(server.url()));
  link.SetProtocolVersion("2025-11-25");
  std::string error;
  auto first = link.Request(Call(1), In(10000), &error);
  ASSERT_TRUE(first) << error;
  EXPECT_EQ((*first)["result"]["n"], 1);
  auto second = link.Request(Call(2, "get-sum"), In(10000), &error);
  ASSERT_TRUE(second) << error;
  EXPECT_EQ((*second)["result"]["n"], 2);
  const std::vector<std::string> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].rfind("POST /mcp HTTP/1.1\r\n", 0), 0u) << requests[0];
  for (const char* h :
       {"Host: 127.0.0.1:", "Content-Type: application/json", "MCP-Protocol-Version: 2025-11-25",
        "Mcp-Method: tools/call", "Mcp-Name: echo", "Authorization: Bearer secret-token"}) {
    EXPECT_NE(requests[0].find(h), std::string::npos) << h << " in " << requests[0];
  }
  EXPECT_EQ(requests[0].find("Mcp-Session-Id"), std::string::npos);
  EXPECT_NE(requests[1].find("Mcp-Session-Id: s-42\r\n"), std::string::npos) << requests[1];
  EXPECT_NE(requests[1].find("Mcp-Name: get-sum\r\n"), std::string::npos);
  EXPECT_NE(requests[1].find(R"("id":2)"), std::string::npos);
  EXPECT_TRUE(link.Alive());
}

TEST(UpstreamHttpTest, AnEventStreamInChunksIsReadToTheAwaitedResponse) {
  const std::string events =
      "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\n"
      ": a comment\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n\n"
      "data: {\"jsonrpc\":\"2.0\",\n"
      "data:  \"id\":3,\"result\":{\"ok\":true}}\n\n";
  std::string body;
  for (size_t at = 0; at < events.size(); at += 7) {
    const std::string piece = events.substr(at, 7);
    char size[16];
    snprintf(size, sizeof size, "%zx", piece.size());
    body += std::string(size) + "\r\n" + piece + "\r\n";
  }
  body += "0\r\n\r\n";
  ScriptedServer server(
      {"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
       "Transfer-Encoding: chunked\r\n\r\n" +
       body});
  HttpLink link(HttpSpec(server.url()));
  std::string error;
  auto answer = link.Request(Call(3), In(10000), &error);
  ASSERT_TRUE(answer) << error;
  EXPECT_EQ((*answer)["id"], 3);
  EXPECT_EQ((*answer)["result"]["ok"], true);
}

TEST(UpstreamHttpTest, A404ForgetsTheSessionAndCarriesItsJsonRpcError) {
  ScriptedServer server(
      {JsonReply(R"({"jsonrpc":"2.0","id":1,"result":{}})", "Mcp-Session-Id: s-1\r\n"),
       "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found",
       JsonReply(R"({"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"no"}})", "",
                 "401 Unauthorized"),
       "HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno"});
  HttpLink link(HttpSpec(server.url()));
  std::string error;
  ASSERT_TRUE(link.Request(Call(1), In(10000), &error)) << error;
  EXPECT_FALSE(link.Request(Call(2), In(10000), &error));
  EXPECT_EQ(error, "HTTP 404");
  EXPECT_FALSE(link.Alive());
  error.clear();
  auto refused = link.Request(Call(3), In(10000), &error);
  ASSERT_TRUE(refused) << error;
  EXPECT_EQ((*refused)["error"]["code"], -32001);
  EXPECT_FALSE(link.Request(Call(4), In(10000), &error));
  EXPECT_EQ(error, "HTTP 403 (check the entry's \"headers\")");
}

TEST(UpstreamHttpTest, BrokenAnswersAreRefusedSayingWhy) {
  const std::string long_head = "HTTP/1.1 200 OK\r\nX-Pad: " + std::string(70000, 'a') + "\r\n\r\n";
  ScriptedServer server({long_head, JsonReply(R"({"jsonrpc":"2.0","id":7,"result":{}})"),
                         JsonReply("not json"), "SSH-2.0-OpenSSH\r\n\r\n",
                         "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\""});
  HttpLink link(HttpSpec(server.url()));
  std::string error;
  EXPECT_FALSE(link.Request(Call(1), In(10000), &error));
  EXPECT_EQ(error, "its answer's head passed 64 KiB");
  EXPECT_FALSE(link.Request(Call(1), In(10000), &error));
  EXPECT_EQ(error, "it answered with another request's id (7)");
  EXPECT_FALSE(link.Request(Call(1), In(10000), &error));
  EXPECT_EQ(error, "it answered something that is not a JSON-RPC response");
  EXPECT_FALSE(link.Request(Call(1), In(10000), &error));
  EXPECT_EQ(error.rfind("it did not answer HTTP (", 0), 0u) << error;
  EXPECT_FALSE(link.Request(Call(1), In(10000), &error));
  EXPECT_EQ(error, "it closed the connection mid-answer");
}

TEST(UpstreamHttpTest, AServerThatSaysNothingEndsAtTheDeadline) {
  ScriptedServer server({""});
  HttpLink link(HttpSpec(server.url()));
  std::string error;
  EXPECT_FALSE(link.Request(Call(1), In(300), &error));
  EXPECT_EQ(error, "it did not answer in time");
}

TEST(UpstreamHttpTest, AbortEndsAPostInFlightAndRefusesTheNext) {
  ScriptedServer server({""});
  HttpLink link(HttpSpec(server.url()));
  std::atomic<bool> done{false};
  std::string error;
  std::thread call([&] {
    EXPECT_FALSE(link.Request(Call(1), In(120000), &error));
    done = true;
  });
  // Abort once the request reached the server (it then waits for a word).
  for (int i = 0; i < 2000 && server.requests().empty(); ++i) usleep(5000);
  ASSERT_EQ(server.requests().size(), 1u);
  link.Abort();
  call.join();  // long before the two minutes
  EXPECT_TRUE(done);
  EXPECT_EQ(error, "the server is shutting down");
  std::string next_error;
  EXPECT_FALSE(link.Request(Call(2), In(10000), &next_error));
  EXPECT_EQ(next_error, "the server is shutting down");
}

TEST(UpstreamHttpTest, NoServerOnThePortIsSaidWithTheAddress) {
  int port;
  {
    ScriptedServer gone({});
    port = std::stoi(gone.url().substr(17));
  }
  HttpLink link(HttpSpec("http://127.0.0.1:" + std::to_string(port) + "/mcp"));
  std::string error;
  EXPECT_FALSE(link.Request(Call(1), In(10000), &error));
  EXPECT_EQ(error.rfind("cannot connect to 127.0.0.1:" + std::to_string(port) + ": ", 0), 0u)
      << error;
}

}  // namespace
}  // namespace mcpexec::upstream
