#include "transport/mcp_headers.h"

#include <strings.h>

#include <cstdlib>

#include "base/base64.h"
#include "base/utf8.h"
#include "protocol/stateless.h"
#include "protocol/tasks.h"

namespace mcpexec::mcp_headers {

using json = nlohmann::json;

namespace {

constexpr std::string_view kPrefix = "=?base64?";
constexpr std::string_view kSuffix = "?=";

// Every value of the header `name` (names compare without case).
std::vector<std::string> ValuesOf(const HeaderList& headers, const std::string& name) {
  std::vector<std::string> values;
  for (const auto& [n, v] : headers) {
    if (strcasecmp(n.c_str(), name.c_str()) == 0) values.push_back(v);
  }
  return values;
}

bool HasInvalidCharacter(std::string_view v) {
  for (unsigned char c : v) {
    if (c != '\t' && (c < 0x20 || c > 0x7E)) return true;
  }
  return false;
}

std::string Quote(std::string_view v) { return "'" + std::string(v.substr(0, 200)) + "'"; }

// The one value of a header that must be there once, decoded if it may be.
std::optional<std::string> Single(const HeaderList& headers, const std::string& name, bool encoded,
                                  std::string* value) {
  std::vector<std::string> values = ValuesOf(headers, name);
  if (values.empty()) return "Header mismatch: the " + name + " header is missing";
  if (values.size() > 1) return "Header mismatch: the " + name + " header is given more than once";
  std::optional<std::string> v =
      encoded ? DecodeValue(values[0])
              : (HasInvalidCharacter(values[0]) ? std::nullopt
                                                : std::optional<std::string>(TrimOws(values[0])));
  if (!v) return "Header mismatch: the " + name + " header holds an invalid value";
  *value = *v;
  return std::nullopt;
}

std::optional<std::string> MustEqual(const HeaderList& headers, const std::string& name,
                                     bool encoded, const std::string& body_value) {
  std::string value;
  if (auto failed = Single(headers, name, encoded, &value)) return failed;
  if (value != body_value) {
    return "Header mismatch: " + name + " header value " + Quote(value) +
           " does not match body value " + Quote(body_value);
  }
  return std::nullopt;
}

// The body value as a header would carry it; nullopt for a type that has
// no header form (objects, arrays; numbers are compared as numbers).
std::optional<std::string> AsHeaderText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.dump();
  return std::nullopt;
}

}  // namespace

std::string_view TrimOws(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

std::optional<std::string> DecodeValue(std::string_view raw) {
  if (HasInvalidCharacter(raw)) return std::nullopt;
  std::string_view v = TrimOws(raw);
  if (v.size() < kPrefix.size() + kSuffix.size() || v.substr(0, kPrefix.size()) != kPrefix ||
      v.substr(v.size() - kSuffix.size()) != kSuffix) {
    return std::string(v);
  }
  std::optional<std::string> decoded =
      Base64Decode(v.substr(kPrefix.size(), v.size() - kPrefix.size() - kSuffix.size()));
  if (!decoded || !IsValidUtf8(*decoded)) return std::nullopt;
  return decoded;
}

std::optional<std::string> CheckStandardHeaders(const HeaderList& headers, const json& msg) {
  const json& params = msg.contains("params") ? msg["params"] : json();
  std::string version;
  if (params.is_object() && params.contains("_meta") && params["_meta"].is_object()) {
    version = params["_meta"].value(stateless::kMetaProtocolVersion, json("")).is_string()
                  ? params["_meta"].value(stateless::kMetaProtocolVersion, std::string())
                  : std::string();
  }
  if (auto failed = MustEqual(headers, "MCP-Protocol-Version", false, version)) return failed;
  const std::string method = msg.value("method", json("")).is_string()
                                 ? msg.value("method", std::string())
                                 : std::string();
  if (auto failed = MustEqual(headers, "Mcp-Method", false, method)) return failed;
  // Mcp-Name mirrors the body's name, uri or (the tasks extension's
  // methods, so that a balancer routes them to the task's instance) taskId.
  const char* source = nullptr;
  if (method == "resources/read") {
    source = "uri";
  } else if (method == "tools/call" || method == "prompts/get") {
    source = "name";
  } else if (IsTaskMethod(method)) {
    source = "taskId";
  }
  if (!source) return std::nullopt;
  const json name = params.is_object() ? params.value(source, json()) : json();
  if (!name.is_string()) return std::nullopt;  // the body's own fault, said by the method
  return MustEqual(headers, "Mcp-Name", true, name.get<std::string>());
}

std::vector<ParamHeader> ParamHeaderDecls(const json& input_schema) {
  std::vector<ParamHeader> decls;
  if (!input_schema.is_object() || !input_schema.contains("properties") ||
      !input_schema["properties"].is_object()) {
    return decls;
  }
  for (const auto& [property, schema] : input_schema["properties"].items()) {
    if (schema.is_object() && schema.contains("x-mcp-header") &&
        schema["x-mcp-header"].is_string()) {
      decls.push_back({"Mcp-Param-" + schema["x-mcp-header"].get<std::string>(), property});
    }
  }
  return decls;
}

std::optional<std::string> CheckParamHeaders(const HeaderList& headers,
                                             const std::vector<ParamHeader>& decls,
                                             const json& arguments) {
  for (const ParamHeader& d : decls) {
    const json body =
        arguments.is_object() && arguments.contains(d.property) ? arguments[d.property] : json();
    if (body.is_null()) {
      if (!ValuesOf(headers, d.header).empty()) {
        return "Header mismatch: " + d.header + " is given but the body has no " + d.property;
      }
      continue;
    }
    std::string value;
    if (auto failed = Single(headers, d.header, true, &value)) return failed;
    std::optional<std::string> text = AsHeaderText(body);
    bool equal = text && value == *text;
    if (body.is_number()) {  // compared as numbers: 42.0 is 42
      char* end = nullptr;
      const double parsed = strtod(value.c_str(), &end);
      equal = !value.empty() && end && *end == '\0' && parsed == body.get<double>();
    }
    if (!equal) {
      return "Header mismatch: " + d.header + " header value " + Quote(value) +
             " does not match body value " + Quote(text ? *text : body.dump());
    }
  }
  return std::nullopt;
}

}  // namespace mcpexec::mcp_headers
