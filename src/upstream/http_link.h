// A streamable HTTP upstream, spoken to through Boost.Beast (the stack the
// server's own HTTP transport stands on): one POST per message, answered
// with JSON or with an event stream that carries the response; a connection
// whose answer was read to its end is kept for the next POSTs. An https
// URL is spoken to over TLS (OpenSSL through Asio): TLS 1.2 or later, the
// server's chain verified against the system's CA store or the entry's
// "ca" file, its name (or address) against the URL's host, SNI sent. Every step
// of a POST (connect, write, each read) is held to the call's deadline by
// Beast's stream timer, and every answer is read with bounds: 64 KiB for
// the head and the chunk lines, kMaxMessage for a message.
#pragma once

#include <atomic>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "upstream/config.h"
#include "upstream/link.h"

namespace mcpexec::upstream {

// What the client reads from an answer's head besides its message.
struct AnswerHead {
  int status = 0;
  std::optional<std::string> session_id;  // Mcp-Session-Id, when sent
  bool reusable = false;                  // the connection may carry the next request
};

class HttpLink : public Link {
 public:
  explicit HttpLink(const Spec& spec);
  ~HttpLink() override;
  std::optional<nlohmann::json> Request(const nlohmann::json& request, Clock::time_point deadline,
                                        std::string* error) override;
  void Notify(const nlohmann::json& notification) override;
  // False once the server forgot its session (404): the client then does
  // its handshake again.
  bool Alive() const override { return !expired_.load(); }
  void Abort() override;  // ends the POSTs in flight, and refuses new ones
  void SetProtocolVersion(const std::string& v);

  struct Exchange;    // one POST's connection (http_link.cc)
  struct TlsContext;  // https: the trusted CAs and the settings (http_link.cc)

 private:
  // One POST; the answer with the message's id (or, with no id, none
  // awaited: a JSON null once the server took it).
  std::optional<nlohmann::json> Post(const nlohmann::json& message, Clock::time_point deadline,
                                     std::string* error);
  bool Open(Exchange* exchange, std::string* error);
  void Close(Exchange* exchange);
  std::unique_ptr<Exchange> Connection(Clock::time_point deadline, bool* reused,
                                       std::string* error);
  boost::beast::http::request<boost::beast::http::string_body> Build(const nlohmann::json& message);

  // Connections kept for the next POSTs (HTTP/1.1 keep-alive): at most
  // kMaxIdle, each for at most kIdleFor, checked before it is used again.
  static constexpr size_t kMaxIdle = 8;
  static constexpr std::chrono::seconds kIdleFor{30};

  const Spec spec_;
  Url url_;
  std::unique_ptr<TlsContext> tls_;
  std::mutex mu_;
  std::string session_id_;
  std::string protocol_version_;
  std::atomic<bool> expired_{false};
  std::set<Exchange*> open_;                     // the POSTs in flight (under mu_)
  std::vector<std::unique_ptr<Exchange>> idle_;  // kept connections (under mu_)
  bool aborted_ = false;
};

// The answer to `message` read from a connected stream socket exactly as a
// POST reads it (the fuzz target hands it one end of a socketpair).
std::optional<nlohmann::json> ReadAnswerFrom(int fd, const nlohmann::json& message,
                                             Clock::time_point deadline, AnswerHead* head,
                                             std::string* error);

}  // namespace mcpexec::upstream
