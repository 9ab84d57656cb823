#include "protocol/jsonrpc.h"

#include <limits>
#include <utility>

namespace mcpexec::jsonrpc {

using json = nlohmann::json;

std::optional<RequestId> RequestId::From(const json& v) {
  RequestId id;
  if (v.is_string()) {
    id.v_ = v.get<std::string>();
  } else if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      id.v_ = static_cast<int64_t>(u);
    } else {
      id.v_ = u;
    }
  } else if (v.is_number_integer()) {
    id.v_ = v.get<int64_t>();
  } else {
    return std::nullopt;
  }
  return id;
}

json RequestId::ToJson() const {
  return std::visit([](const auto& v) { return json(v); }, v_);
}

json Error(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json Result(const json& id, const json& result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", result}};
}

namespace {

Inbound Refused(const json& id, int code, const std::string& message) {
  Inbound in;
  in.kind = Inbound::Kind::kRefused;
  in.refusal = Error(id, code, message);
  return in;
}

}  // namespace

Inbound Classify(const json& msg) {
  if (msg.is_array()) {
    return Refused(nullptr, kInvalidRequest,
                   "batch requests are not supported; send one message at a time");
  }
  if (!msg.is_object()) return Refused(nullptr, kInvalidRequest, "a message must be a JSON object");
  const bool has_id = msg.contains("id");
  std::optional<RequestId> id = has_id ? RequestId::From(msg["id"]) : std::nullopt;
  // The id an error may echo: the message's own when it is valid.
  const json echo = id ? id->ToJson() : json(nullptr);
  if (!msg.contains("jsonrpc") || msg["jsonrpc"] != "2.0") {
    return Refused(echo, kInvalidRequest, "jsonrpc must be \"2.0\"");
  }
  if (!msg.contains("method")) {
    if (msg.contains("result") || msg.contains("error")) {
      Inbound in;
      in.kind = Inbound::Kind::kResponse;
      in.id = std::move(id);
      return in;
    }
    return Refused(echo, kInvalidRequest, "method is missing");
  }
  if (!msg["method"].is_string()) return Refused(echo, kInvalidRequest, "method must be a string");
  if (has_id && !id) return Refused(nullptr, kInvalidRequest, "id must be a string or an integer");
  Inbound in;
  in.kind = has_id ? Inbound::Kind::kRequest : Inbound::Kind::kNotification;
  in.id = std::move(id);
  in.method = msg["method"].get<std::string>();
  auto params = msg.find("params");
  if (params == msg.end() || params->is_null()) {
    in.params = json::object();
  } else if (params->is_object()) {
    in.params = *params;
  } else if (has_id) {
    return Refused(echo, kInvalidParams, "params must be an object");
  } else {
    in.kind = Inbound::Kind::kDropped;
  }
  return in;
}

}  // namespace mcpexec::jsonrpc
