#include "upstream/http_link.h"

// clang-format off: Boost.Asio 1.74's awaitable.hpp uses std::exchange
// without including <utility>.
#include <utility>
// clang-format on
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <limits>

#include "upstream/framing.h"

namespace mcpexec::upstream {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;

namespace {

// An answer's head, and a chunk's size line, are a few hundred bytes from
// any real server; the buffer holds one of them whole, and no more.
constexpr uint32_t kMaxHead = 65536;
constexpr size_t kMaxBuffered = size_t{2} * kMaxHead;
constexpr size_t kPiece = 65536;

using Parser = bhttp::response_parser<bhttp::buffer_body>;

}  // namespace

// One POST's connection: an io_context of its own, run on the caller's
// thread one step at a time, each step held to the deadline by the
// stream's timer (under TLS too: the TLS stream reads and writes through
// it). Abort may come from any thread.
struct HttpLink::Exchange {
  explicit Exchange(Clock::time_point until) : deadline(until) {}

  // Starts one asynchronous operation (start(handler)) and runs it to its
  // end; its error, or operation_aborted once Abort was called.
  template <class Start>
  beast::error_code Step(Start start) {
    if (aborted) return asio::error::operation_aborted;
    beast::error_code result = asio::error::operation_aborted;
    stream.expires_at(deadline);
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run();
    return aborted ? beast::error_code(asio::error::operation_aborted) : result;
  }

  // One operation on the connection as the request goes: through TLS
  // when there is a session, on the socket itself otherwise.
  template <class Operation>
  beast::error_code Io(Operation operation) {
    return Step([&](auto handler) {
      if (tls) {
        operation(*tls, handler);
      } else {
        operation(stream, handler);
      }
    });
  }

  // From another thread: the step running ends now, and so does every
  // step after it (the socket is shut, not only the operation cancelled,
  // so that a step a composed operation starts next fails at once too).
  void Abort() {
    aborted = true;
    asio::post(ioc, [this] {
      beast::error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream.cancel();
    });
  }

  asio::io_context ioc{1};
  beast::tcp_stream stream{ioc};
  std::optional<ssl::stream<beast::tcp_stream&>> tls;  // https
  beast::flat_buffer buffer{kMaxBuffered};
  Clock::time_point deadline;
  Clock::time_point idle_since;  // kept idle by the link since
  std::atomic<bool> aborted{false};
};

namespace {

// What went wrong, in the words a run's error shows.
std::string Why(beast::error_code ec) {
  if (ec == asio::error::operation_aborted) return "the server is shutting down";
  if (ec == beast::error::timeout) return "it did not answer in time";
  if (ec == bhttp::error::header_limit) return "its answer's head passed 64 KiB";
  if (ec == bhttp::error::body_limit) return "it sent a message of more than 64 MiB";
  if (ec == bhttp::error::buffer_overflow) return "it sent a line of more than 64 KiB";
  if (ec == bhttp::error::end_of_stream) return "it closed the connection before answering";
  if (ec == bhttp::error::partial_message) return "it closed the connection mid-answer";
  return "it did not answer HTTP (" + ec.message() + ")";
}

// The body's next bytes appended to *out; false at its end or on an error
// (*ec).
bool NextPiece(HttpLink::Exchange& ex, Parser& parser, std::string* out, beast::error_code* ec) {
  if (parser.is_done()) return false;
  char piece[kPiece];
  bhttp::buffer_body::value_type& body = parser.get().body();
  body.data = piece;
  body.size = sizeof piece;
  beast::error_code e = ex.Io([&](auto& stream, auto handler) {
    bhttp::async_read_some(stream, ex.buffer, parser, handler);
  });
  if (e == bhttp::error::need_buffer) e = {};
  out->append(piece, sizeof piece - body.size);
  body.data = nullptr;
  if (e) *ec = e;
  return !e;
}

// The whole body of a plain (not event-stream) answer.
bool ReadBody(HttpLink::Exchange& ex, Parser& parser, std::string* body, std::string* error) {
  parser.body_limit(kMaxMessage);  // before any of the body is parsed
  beast::error_code ec;
  while (NextPiece(ex, parser, body, &ec)) {
  }
  if (ec) *error = Why(ec);
  return !ec;
}

// An event stream's events until the response with this id.
std::optional<nlohmann::json> ResponseEvent(HttpLink::Exchange& ex, Parser& parser,
                                            const nlohmann::json& id,
                                            const std::function<void()>& on_tools_changed,
                                            std::string* error) {
  EventStream events;
  std::optional<nlohmann::json> found;
  std::string piece;
  beast::error_code ec;
  while (!found && NextPiece(ex, parser, &piece, &ec)) {
    const bool ok = events.Feed(piece.data(), piece.size(), [&](std::string_view data) {
      if (found) return;
      nlohmann::json m = ParseMessage(data);
      if (IsResponse(m) && m["id"] == id) {
        found = std::move(m);
      } else if (IsToolsChanged(m) && on_tools_changed) {
        on_tools_changed();
      }
    });
    piece.clear();
    if (!ok && !found) {
      *error = "it sent a message of more than 64 MiB";
      return std::nullopt;
    }
  }
  if (found) return found;
  *error = ec ? Why(ec) : "its event stream ended without the answer";
  return std::nullopt;
}

// An answer that is not 2xx: a JSON-RPC error it carries, or the status.
std::optional<nlohmann::json> Refusal(HttpLink::Exchange& ex, Parser& parser, int status,
                                      std::string* error) {
  std::string body;
  if (!ReadBody(ex, parser, &body, error)) return std::nullopt;
  nlohmann::json j = ParseMessage(body);
  if (IsResponse(j)) return j;
  *error = "HTTP " + std::to_string(status) +
           (status == 401 || status == 403 ? " (check the entry's \"headers\")" : "");
  return std::nullopt;
}

// The answer to `message` on a stream the request went out on.
std::optional<nlohmann::json> ReadAnswer(HttpLink::Exchange& ex, const nlohmann::json& message,
                                         const std::function<void()>& on_tools_changed,
                                         AnswerHead* head, std::string* error) {
  Parser parser;
  parser.header_limit(kMaxHead);
  // Beast 1.74 compares a Content-Length with an unset limit as if the
  // limit were 0: "no limit" while the head is read; a plain body gets its
  // cap before its first byte, an event stream's events are bounded one by
  // one (EventStream).
  parser.body_limit(std::numeric_limits<uint64_t>::max());
  if (beast::error_code ec = ex.Io([&](auto& stream, auto handler) {
        bhttp::async_read_header(stream, ex.buffer, parser, handler);
      })) {
    *error = Why(ec);
    return std::nullopt;
  }
  const auto& response = parser.get();
  head->status = static_cast<int>(response.result_int());
  if (auto it = response.find("Mcp-Session-Id"); it != response.end()) {
    head->session_id = std::string(it->value());
  }
  const bool awaited = message.contains("id");
  // The connection can carry the next request once this answer was read
  // to its end, the server keeps it open, and nothing more came on it.
  struct Reusable {
    AnswerHead* head;
    HttpLink::Exchange& ex;
    Parser& parser;
    ~Reusable() {
      head->reusable = parser.is_done() && parser.keep_alive() && ex.buffer.size() == 0;
    }
  } reusable{head, ex, parser};
  if (head->status / 100 != 2) return Refusal(ex, parser, head->status, error);
  if (head->status == 202 && !awaited) return nlohmann::json();
  std::string type(response[bhttp::field::content_type]);
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (type.find("text/event-stream") != std::string::npos) {
    if (!awaited) return nlohmann::json();
    return ResponseEvent(ex, parser, message["id"], on_tools_changed, error);
  }
  std::string body;
  if (!ReadBody(ex, parser, &body, error)) return std::nullopt;
  if (!awaited) return nlohmann::json();
  nlohmann::json j = ParseMessage(body);
  if (!IsResponse(j)) {
    *error = "it answered something that is not a JSON-RPC response";
    return std::nullopt;
  }
  if (j["id"] != message["id"]) {
    *error = "it answered with another request's id (" + j["id"].dump().substr(0, 64) + ")";
    return std::nullopt;
  }
  return j;
}

// The TLS session on a connected stream: the server's chain verified
// against the trusted CAs, and its name against the URL's host (its
// address, when the host is one); SNI names the host when it is a name.
bool Handshake(HttpLink::Exchange& ex, ssl::context& context, const std::string& host,
               std::string* error) {
  ex.tls.emplace(ex.stream, context);
  SSL* native = ex.tls->native_handle();
  beast::error_code not_an_address;
  asio::ip::make_address(host, not_an_address);
  X509_VERIFY_PARAM* param = SSL_get0_param(native);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  const bool set = not_an_address
                       ? SSL_set_tlsext_host_name(native, host.c_str()) == 1 &&
                             X509_VERIFY_PARAM_set1_host(param, host.data(), host.size()) == 1
                       : X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1;
  if (!set) {
    *error = "cannot set up TLS for the host " + host;
    return false;
  }
  ex.tls->set_verify_mode(ssl::verify_peer);
  const beast::error_code ec =
      ex.Step([&](auto handler) { ex.tls->async_handshake(ssl::stream_base::client, handler); });
  if (!ec) return true;
  const long verified = SSL_get_verify_result(native);
  if (ec == asio::error::operation_aborted) {
    *error = Why(ec);
  } else if (verified != X509_V_OK) {
    *error = "its certificate was refused: " + std::string(X509_verify_cert_error_string(verified));
  } else if (ec == beast::error::timeout) {
    *error = "it did not finish the TLS handshake in time";
  } else {
    *error = "the TLS handshake failed: " + ec.message();
  }
  return false;
}

// A header value as sent: nothing that could end the line it is on.
bool Sendable(const std::string& value) {
  return value.find_first_of("\r\n", 0, 3) == std::string::npos;
}

}  // namespace

struct HttpLink::TlsContext {
  ssl::context context{ssl::context::tls_client};
  std::string error;  // why the context cannot be used, said by every POST
};

HttpLink::HttpLink(const Spec& spec) : spec_(spec) {
  std::string error;
  ParseUrl(spec_.url, &url_, &error);  // checked when the file was read
  if (!url_.tls) return;
  tls_ = std::make_unique<TlsContext>();
  SSL_CTX_set_min_proto_version(tls_->context.native_handle(), TLS1_2_VERSION);
  beast::error_code ec;
  if (spec_.ca.empty()) {
    tls_->context.set_default_verify_paths(ec);
    if (ec) tls_->error = "cannot read the system's CA store: " + ec.message();
  } else {
    tls_->context.load_verify_file(spec_.ca, ec);
    if (ec) tls_->error = "cannot use \"ca\" " + spec_.ca + ": " + ec.message();
  }
}

HttpLink::~HttpLink() = default;

void HttpLink::SetProtocolVersion(const std::string& v) {
  std::lock_guard<std::mutex> lock(mu_);
  protocol_version_ = v;
}

bool HttpLink::Open(Exchange* exchange, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) {
    *error = "the server is shutting down";
    return false;
  }
  open_.insert(exchange);
  return true;
}

void HttpLink::Close(Exchange* exchange) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(exchange);
}

// A connection for the next POST, registered (Abort ends it, connecting
// too): an idle one kept from an earlier POST (*reused) that the server has
// not closed meanwhile, or a new one (resolved, connected and, for https,
// verified).
std::unique_ptr<HttpLink::Exchange> HttpLink::Connection(Clock::time_point deadline, bool* reused,
                                                         std::string* error) {
  *reused = false;
  for (;;) {
    std::unique_ptr<Exchange> idle;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_.empty()) break;
      idle = std::move(idle_.back());
      idle_.pop_back();
    }
    // Readable while idle: the server closed it (or sent what no request
    // asked for); either way it is not used again.
    pollfd p{idle->stream.socket().native_handle(), POLLIN, 0};
    if (Clock::now() - idle->idle_since < kIdleFor && poll(&p, 1, 0) == 0) {
      idle->deadline = deadline;
      *reused = true;
      return Open(idle.get(), error) ? std::move(idle) : nullptr;
    }
  }
  auto ex = std::make_unique<Exchange>(deadline);
  if (!Open(ex.get(), error)) return nullptr;
  struct Unregister {
    HttpLink* link;
    Exchange* ex;
    ~Unregister() {
      if (ex) link->Close(ex);
    }
  } unregister{this, ex.get()};
  const std::string port = std::to_string(url_.port);
  beast::error_code ec;
  // Resolved with getaddrinfo, which has no deadline of its own.
  const tcp::resolver::results_type endpoints = tcp::resolver(ex->ioc).resolve(url_.host, port, ec);
  if (ec) {
    *error = "cannot resolve " + url_.host + ": " + ec.message();
    return nullptr;
  }
  if ((ec = ex->Step([&](auto handler) { ex->stream.async_connect(endpoints, handler); }))) {
    *error = ec == asio::error::operation_aborted
                 ? Why(ec)
                 : "cannot connect to " + url_.host + ":" + port + ": " +
                       (ec == beast::error::timeout ? "it did not answer in time" : ec.message());
    return nullptr;
  }
  // A request goes out as a few writes (head, body; TLS records): without
  // this, on a kept connection Nagle's algorithm holds each later one until
  // the server's delayed ACK, some 40 ms.
  ex->stream.socket().set_option(tcp::no_delay(true), ec);
  if (tls_ && !Handshake(*ex, tls_->context, url_.host, error)) return nullptr;
  unregister.ex = nullptr;  // the caller's now, and Close is its to call
  return ex;
}

// The request that carries message, with the session's headers and the
// entry's own.
bhttp::request<bhttp::string_body> HttpLink::Build(const nlohmann::json& message) {
  bhttp::request<bhttp::string_body> request{bhttp::verb::post, url_.target, 11};
  const bool v6 = url_.host.find(':') != std::string::npos;
  const bool default_port = url_.port == (url_.tls ? 443 : 80);
  request.set(bhttp::field::host, (v6 ? "[" + url_.host + "]" : url_.host) +
                                      (default_port ? "" : ":" + std::to_string(url_.port)));
  request.set(bhttp::field::content_type, "application/json");
  request.set(bhttp::field::accept, "application/json, text/event-stream");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!session_id_.empty()) request.set("Mcp-Session-Id", session_id_);
    if (!protocol_version_.empty()) request.set("MCP-Protocol-Version", protocol_version_);
  }
  if (const std::string method = message.value("method", ""); !method.empty()) {
    request.set("Mcp-Method", method);
    const nlohmann::json* params = message.contains("params") ? &message["params"] : nullptr;
    if (params && params->is_object() && params->contains("name") &&
        (*params)["name"].is_string() && Sendable((*params)["name"].get<std::string>())) {
      request.set("Mcp-Name", (*params)["name"].get<std::string>());
    }
  }
  for (const auto& [k, v] : spec_.headers) request.set(k, v);
  request.body() = message.dump();
  request.prepare_payload();
  return request;
}

std::optional<nlohmann::json> HttpLink::Post(const nlohmann::json& message,
                                             Clock::time_point deadline, std::string* error) {
  if (tls_ && !tls_->error.empty()) {
    *error = tls_->error;
    return std::nullopt;
  }
  const bhttp::request<bhttp::string_body> request = Build(message);
  // A kept connection the server closed just as the request went out fails
  // before any answer: the request goes again, once, on a new connection;
  // a tools/call only when it was not written whole (a tool is never run
  // twice for one call).
  const bool repeatable = message.value("method", "") != "tools/call";
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    std::unique_ptr<Exchange> ex = Connection(deadline, &reused, error);
    if (!ex) return std::nullopt;
    AnswerHead head;
    std::optional<nlohmann::json> answer;
    beast::error_code ec =
        ex->Io([&](auto& stream, auto handler) { bhttp::async_write(stream, request, handler); });
    if (ec) {
      *error = ec == beast::error::timeout ? "it did not read its input in time" : Why(ec);
    } else {
      answer = ReadAnswer(*ex, message, on_tools_changed, &head, error);
    }
    Close(ex.get());
    const bool failed_before_answer = !answer && head.status == 0 && !ex->aborted &&
                                      Clock::now() < deadline && (ec || repeatable);
    if (reused && failed_before_answer && attempt == 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (head.session_id) session_id_ = *head.session_id;
    // 404 is the specification's answer to a session the server ended; the
    // TypeScript SDK's servers say 400 to one they never knew (they
    // restarted). Either way a new handshake is due.
    if ((head.status == 404 || head.status == 400) && !session_id_.empty()) expired_ = true;
    if (answer && head.reusable && !aborted_ && idle_.size() < kMaxIdle) {
      ex->idle_since = Clock::now();
      idle_.push_back(std::move(ex));
    }
    return answer;
  }
}

void HttpLink::Abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  idle_.clear();
  for (Exchange* ex : open_) ex->Abort();
}

std::optional<nlohmann::json> HttpLink::Request(const nlohmann::json& request,
                                                Clock::time_point deadline, std::string* error) {
  return Post(request, deadline, error);
}

void HttpLink::Notify(const nlohmann::json& notification) {
  std::string error;
  Post(notification, Clock::now() + std::chrono::seconds(5), &error);
}

std::optional<nlohmann::json> ReadAnswerFrom(int fd, const nlohmann::json& message,
                                             Clock::time_point deadline, AnswerHead* head,
                                             std::string* error) {
  HttpLink::Exchange ex(deadline);
  beast::error_code ec;
  ex.stream.socket().assign(tcp::v4(), fd, ec);
  if (ec) {
    *error = "assign: " + ec.message();
    return std::nullopt;
  }
  std::optional<nlohmann::json> answer = ReadAnswer(ex, message, {}, head, error);
  ex.stream.socket().release(ec);  // the caller's descriptor stays the caller's
  return answer;
}

}  // namespace mcpexec::upstream
