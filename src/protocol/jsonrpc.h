// JSON-RPC 2.0 as MCP uses it, in both eras: the error codes, a typed
// request id, the answers, and the checks every message passes once, at
// the transport's entry, before it is dispatched (jsonrpc::Classify).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

namespace mcpexec::jsonrpc {

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kResourceNotFound = -32002;  // MCP 2025 revisions

// A request's id: a string or an integer (JSON-RPC also allows null and
// fractions; MCP does not). Ids compare by value and type: 5 and "5" are
// two ids, 5 and 5.0 cannot occur. The key of every table of requests in
// flight (calls, listens, the HTTP POSTs that wait for an answer).
class RequestId {
 public:
  // nullopt unless `v` is a string or an integer.
  static std::optional<RequestId> From(const nlohmann::json& v);
  nlohmann::json ToJson() const;
  bool operator==(const RequestId& o) const { return v_ == o.v_; }
  bool operator!=(const RequestId& o) const { return v_ != o.v_; }
  bool operator<(const RequestId& o) const { return v_ < o.v_; }

 private:
  // An integer above INT64_MAX stays unsigned (JSON has no such limit).
  std::variant<int64_t, uint64_t, std::string> v_;
};

nlohmann::json Error(const nlohmann::json& id, int code, const std::string& message);
nlohmann::json Result(const nlohmann::json& id, const nlohmann::json& result);
inline nlohmann::json Error(const RequestId& id, int code, const std::string& message) {
  return Error(id.ToJson(), code, message);
}
inline nlohmann::json Result(const RequestId& id, const nlohmann::json& result) {
  return Result(id.ToJson(), result);
}

// A message once its envelope is checked: jsonrpc "2.0", a string method,
// an id that is a string or an integer, params an object (absent or null:
// {}).
// (clang-tidy cannot see that nlohmann::json's implicit moves do not throw.)
struct Inbound {  // NOLINT(bugprone-exception-escape)
  enum class Kind {
    kRequest,       // id, method, params
    kNotification,  // method, params
    kResponse,      // a client's answer (this server sends no requests): dropped
    kDropped,       // a notification with params that are not an object
    kRefused,       // answer `refusal`, an error response
  };
  Kind kind = Kind::kDropped;
  std::optional<RequestId> id;
  std::string method;
  nlohmann::json params;
  nlohmann::json refusal;  // kRefused: -32600 or -32602, with the id when it has a valid one
};

// Never throws; reads `msg` without recursing into it (it was parsed with
// bounds: base/bounded_json.h).
Inbound Classify(const nlohmann::json& msg);

}  // namespace mcpexec::jsonrpc
