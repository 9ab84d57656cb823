#include "upstream/config.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/bounded_json.h"

namespace mcpexec::upstream {

namespace {

bool StringMap(const nlohmann::json& j, const std::string& what, const std::string& name,
               std::map<std::string, std::string>* out, std::string* error) {
  if (j.is_null()) return true;
  if (!j.is_object()) {
    *error = "upstream '" + name + "': \"" + what + "\" must be an object of strings";
    return false;
  }
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) {
      *error = "upstream '" + name + "': \"" + what + "\"." + k + " must be a string";
      return false;
    }
    (*out)[k] = v.get<std::string>();
  }
  return true;
}

bool StringList(const nlohmann::json& j, const std::string& what, const std::string& name,
                std::vector<std::string>* out, std::string* error) {
  if (!j.is_array()) {
    *error = "upstream '" + name + "': \"" + what + "\" must be an array of strings";
    return false;
  }
  for (const auto& v : j) {
    if (!v.is_string()) {
      *error = "upstream '" + name + "': \"" + what + "\" must be an array of strings";
      return false;
    }
    out->push_back(v.get<std::string>());
  }
  return true;
}

bool ParseOne(const std::string& name, const nlohmann::json& e, Spec* s, std::string* error) {
  s->name = name;
  if (name.empty() || name.size() > 64) {
    *error = "upstream '" + name + "': a name must have 1 to 64 characters";
    return false;
  }
  if (!e.is_object()) {
    *error = "upstream '" + name + "': its entry must be an object";
    return false;
  }
  static const char* const kKnown[] = {"command", "args",  "env",  "url",
                                       "headers", "allow", "type", "transport"};
  for (const auto& [k, v] : e.items()) {
    bool known = false;
    for (const char* n : kKnown) known = known || k == n;
    if (!known) {
      *error = "upstream '" + name + "': unknown key \"" + k +
               "\" (known: command, args, env, url, headers, allow)";
      return false;
    }
  }
  const bool has_command = e.contains("command"), has_url = e.contains("url");
  if (has_command == has_url) {
    *error = "upstream '" + name +
             "': give either \"command\" (a stdio server) or \"url\" (a "
             "streamable HTTP server), not " +
             (has_command ? "both" : "neither");
    return false;
  }
  if (has_command) {
    if (!e["command"].is_string() || e["command"].get<std::string>().empty()) {
      *error = "upstream '" + name + "': \"command\" must be a non-empty string";
      return false;
    }
    s->command = e["command"].get<std::string>();
    if (e.contains("args") && !StringList(e["args"], "args", name, &s->args, error)) return false;
    if (!StringMap(e.value("env", nlohmann::json()), "env", name, &s->env, error)) return false;
    if (e.contains("headers")) {
      *error = "upstream '" + name + "': \"headers\" is for a \"url\" server";
      return false;
    }
  } else {
    if (!e["url"].is_string()) {
      *error = "upstream '" + name + "': \"url\" must be a string";
      return false;
    }
    s->url = e["url"].get<std::string>();
    Url u;
    std::string why;
    if (!ParseUrl(s->url, &u, &why)) {
      *error = "upstream '" + name + "': \"url\" " + why;
      return false;
    }
    if (!StringMap(e.value("headers", nlohmann::json()), "headers", name, &s->headers, error)) {
      return false;
    }
    if (e.contains("args") || e.contains("env")) {
      *error = "upstream '" + name + "': \"args\" and \"env\" are for a \"command\" server";
      return false;
    }
  }
  if (e.contains("allow")) {
    if (!StringList(e["allow"], "allow", name, &s->allow, error)) return false;
    s->allow_all = false;
  }
  return true;
}

}  // namespace

std::vector<std::string> Spec::Secrets() const {
  std::vector<std::string> out;
  for (const auto* m : {&env, &headers}) {
    for (const auto& [k, v] : *m) {
      if (v.size() >= 4) out.push_back(v);
    }
  }
  return out;
}

bool ParseSpecs(const std::string& text, std::vector<Spec>* specs, std::string* error) {
  bounded_json::Parsed parsed = bounded_json::Parse(text);
  if (!parsed.ok()) {
    *error = parsed.error;
    return false;
  }
  const nlohmann::json& j = parsed.value;
  if (!j.is_object()) {
    *error = "not a JSON object";
    return false;
  }
  const nlohmann::json servers = j.value("mcpServers", nlohmann::json());
  if (!servers.is_object()) {
    *error = "needs an object \"mcpServers\": {\"NAME\": {\"command\": ...} or {\"url\": ...}}";
    return false;
  }
  std::map<std::string, std::string> python_names;
  for (const auto& [name, entry] : servers.items()) {
    Spec s;
    if (!ParseOne(name, entry, &s, error)) return false;
    auto [it, fresh] = python_names.emplace(PythonName(name), name);
    if (!fresh) {
      *error = "upstreams '" + it->second + "' and '" + name + "' would both be mcp_tools." +
               it->first + ": rename one";
      return false;
    }
    specs->push_back(std::move(s));
  }
  return true;
}

bool LoadSpecs(const std::string& path, std::vector<Spec>* specs, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (!ParseSpecs(ss.str(), specs, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

bool Allowed(const Spec& spec, const std::string& tool) {
  if (spec.allow_all) return true;
  for (const std::string& a : spec.allow) {
    if (!a.empty() && a.back() == '*') {
      if (tool.compare(0, a.size() - 1, a, 0, a.size() - 1) == 0) return true;
    } else if (a == tool) {
      return true;
    }
  }
  return false;
}

std::string PythonName(const std::string& name) {
  std::string out;
  for (unsigned char c : name) {
    out += (std::isalnum(c) && c < 0x80) || c == '_' ? static_cast<char>(c) : '_';
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

bool ParseUrl(const std::string& url, Url* out, std::string* error) {
  const std::string scheme = "http://";
  if (url.rfind("https://", 0) == 0) {
    *error =
        "is https: TLS to an upstream is not supported; reach it over http on a trusted "
        "network, or run it as a stdio server";
    return false;
  }
  if (url.rfind(scheme, 0) != 0) {
    *error = "must start with http://";
    return false;
  }
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (authority.find('@') != std::string::npos) {
    *error = "has a user:password@ part: put credentials in \"headers\"";
    return false;
  }
  out->target = slash == std::string::npos ? "/" : rest.substr(slash);
  const size_t bracket = authority.rfind(']');  // [::1]:port
  size_t colon = authority.rfind(':');
  if (bracket != std::string::npos && colon < bracket) colon = std::string::npos;
  out->host = authority.substr(0, colon);
  out->port = 80;
  if (colon != std::string::npos) {
    std::string port = authority.substr(colon + 1);
    char* end = nullptr;
    long p = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p < 1 || p > 65535) {
      *error = "has a bad port";
      return false;
    }
    out->port = static_cast<int>(p);
  }
  if (out->host.empty()) {
    *error = "has no host";
    return false;
  }
  if (out->host.front() == '[') out->host = out->host.substr(1, out->host.size() - 2);
  return true;
}

}  // namespace mcpexec::upstream
