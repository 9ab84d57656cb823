#include "upstream/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/bounded_json.h"

namespace mcpexec::upstream {

namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// value with each ${NAME} and ${NAME:-default} replaced by the variable's
// value (a '$' before anything else stays as it is); the values used are
// added to *used. False, with *error naming the variable, when one is not
// set and has no default, or a reference is not closed.
bool Expand(const std::string& value, const Lookup& lookup, std::string* out,
            std::vector<std::string>* used, std::string* error) {
  out->clear();
  for (size_t i = 0; i < value.size(); ++i) {
    if (value.compare(i, 2, "${") != 0) {
      *out += value[i];
      continue;
    }
    const size_t close = value.find('}', i + 2);
    const std::string inner =
        close == std::string::npos ? std::string() : value.substr(i + 2, close - i - 2);
    const size_t dash = inner.find(":-");
    const std::string name = inner.substr(0, dash);
    bool good = !name.empty() && IsNameStart(name[0]) &&
                (dash == std::string::npos || inner.find("${", dash) == std::string::npos);
    for (char c : name) good = good && IsNameChar(c);
    if (!good) {
      *error = "has a ${ that is not ${NAME} or ${NAME:-default}";
      return false;
    }
    // As a shell's ${NAME:-default}: the default when NAME is unset or empty.
    const char* env = lookup(name);
    if (env == nullptr && dash == std::string::npos) {
      *error = "names the environment variable " + name + ", which is not set";
      return false;
    }
    const bool set = env != nullptr && *env != '\0';
    const std::string resolved =
        set || dash == std::string::npos ? std::string(env) : inner.substr(dash + 2);
    if (set && resolved.size() >= 4) used->push_back(resolved);
    *out += resolved;
    i = close;
  }
  return true;
}

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

// The ${NAME} references of a map's values resolved in place.
bool ExpandAll(const std::string& what, const Lookup& lookup, Spec* s,
               std::map<std::string, std::string>* values, std::string* error) {
  for (auto& [k, v] : *values) {
    std::string resolved, why;
    if (!Expand(v, lookup, &resolved, &s->referenced, &why)) {
      *error = "upstream '" + s->name + "': \"" + what + "\"." + k + " " + why;
      return false;
    }
    v = std::move(resolved);
  }
  return true;
}

// A "url" entry's own keys: the URL, its headers (their ${NAME}s resolved)
// and its "ca".
bool ParseUrlEntry(const std::string& name, const nlohmann::json& e, const Lookup& lookup, Spec* s,
                   std::string* error) {
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
  if (!ExpandAll("headers", lookup, s, &s->headers, error)) return false;
  for (const auto& [k, v] : s->headers) {
    if ((k + v).find_first_of("\r\n", 0, 3) != std::string::npos) {
      *error = "upstream '" + name + "': \"headers\"." + k + " holds a line break or a NUL";
      return false;
    }
  }
  if (e.contains("ca")) {
    if (!e["ca"].is_string() || e["ca"].get<std::string>().empty()) {
      *error = "upstream '" + name + "': \"ca\" must be a file's path";
      return false;
    }
    if (!u.tls) {
      *error = "upstream '" + name + "': \"ca\" is for an https \"url\"";
      return false;
    }
    s->ca = e["ca"].get<std::string>();
  }
  return true;
}

bool ParseOne(const std::string& name, const nlohmann::json& e, const Lookup& lookup, Spec* s,
              std::string* error) {
  s->name = name;
  if (name.empty() || name.size() > 64) {
    *error = "upstream '" + name + "': a name must have 1 to 64 characters";
    return false;
  }
  if (!e.is_object()) {
    *error = "upstream '" + name + "': its entry must be an object";
    return false;
  }
  static const char* const kKnown[] = {"command", "args",  "env",  "url",      "headers",
                                       "ca",      "allow", "type", "transport"};
  for (const auto& [k, v] : e.items()) {
    bool known = false;
    for (const char* n : kKnown) known = known || k == n;
    if (!known) {
      *error = "upstream '" + name + "': unknown key \"" + k +
               "\" (known: command, args, env, url, headers, ca, allow)";
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
    if (e.contains("headers") || e.contains("ca")) {
      *error = "upstream '" + name + "': \"headers\" and \"ca\" are for a \"url\" server";
      return false;
    }
    if (!ExpandAll("env", lookup, s, &s->env, error)) return false;
  } else if (!ParseUrlEntry(name, e, lookup, s, error)) {
    return false;
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
  out.insert(out.end(), referenced.begin(), referenced.end());
  return out;
}

const char* ProcessEnvironment(const std::string& name) { return std::getenv(name.c_str()); }

std::vector<std::string> Spec::Credentials() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : headers) {
    if (v.size() >= 8) out.push_back(v);
  }
  for (const std::string& v : referenced) {
    if (v.size() >= 8) out.push_back(v);
  }
  return out;
}

bool ParseSpecs(const std::string& text, std::vector<Spec>* specs, std::string* error,
                const Lookup& lookup) {
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
    if (!ParseOne(name, entry, lookup, &s, error)) return false;
    // mcp_tools' own names: an upstream there would hide them.
    for (const char* own : {"call", "search", "servers", "ToolError"}) {
      if (PythonName(name) == own) {
        *error = "upstream '" + name + "' would be mcp_tools." + own +
                 ", which mcp_tools has for itself: rename it";
        return false;
      }
    }
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
  std::string text(kMaxFile + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxFile) {
    *error = path + ": is larger than " + std::to_string(kMaxFile >> 20) + " MiB";
    return false;
  }
  if (!ParseSpecs(text, specs, error)) {
    *error = path + ": " + *error;
    return false;
  }
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  for (Spec& s : *specs) {
    if (s.ca.empty()) continue;
    if (s.ca[0] != '/') s.ca = folder + (folder == "." ? "/" : "") + s.ca;
    struct stat st {};
    if (stat(s.ca.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || access(s.ca.c_str(), R_OK) != 0) {
      *error = path + ": upstream '" + s.name + "': \"ca\" " + s.ca + " is not a readable file";
      return false;
    }
    if (static_cast<size_t>(st.st_size) > kMaxFile) {
      *error = path + ": upstream '" + s.name + "': \"ca\" " + s.ca + " is larger than 1 MiB";
      return false;
    }
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
  out->tls = url.rfind("https://", 0) == 0;
  const std::string scheme = out->tls ? "https://" : "http://";
  if (url.rfind(scheme, 0) != 0) {
    *error = "must start with https:// or http://";
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
  out->port = out->tls ? 443 : 80;
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
