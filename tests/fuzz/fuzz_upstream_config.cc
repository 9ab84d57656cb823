// The upstreams file (MCP_EXEC_UPSTREAMS): the whole text, parsed by the
// real ParseSpecs, with an environment of three variables standing in for
// the server's (SET=value-1, EMPTY=, LINE= a value with a line break).
// Checked: exactly one outcome; an error never shows a variable's value;
// an accepted file's entries are each either stdio or a
// URL that parses, with no line break in a header, every ${NAME} resolved
// (no "${SET" left), and every value a variable gave counted among the
// entry's secrets.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "upstream/config.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  fprintf(stderr, "fuzz_upstream_config: %s: %s\n", what, detail.c_str());
  abort();
}

const char* Lookup(const std::string& name) {
  if (name == "SET") return "value-1";
  if (name == "EMPTY") return "";
  if (name == "LINE") return "a\r\nInjected: yes";
  return nullptr;
}

void CheckSpec(const mcpexec::upstream::Spec& s, bool from_file) {
  using mcpexec::upstream::Url;
  if (s.name.empty() || s.name.size() > 64) Fail("a name out of bounds", s.name);
  if (s.stdio() == !s.url.empty()) Fail("neither or both of command and url", s.name);
  if (!s.stdio()) {
    Url u;
    std::string why;
    if (!mcpexec::upstream::ParseUrl(s.url, &u, &why)) Fail("a url that does not parse", s.url);
    if (!s.ca.empty() && !u.tls) Fail("a ca for plain http", s.url);
  }
  const std::vector<std::string> secrets = s.Secrets();
  for (const auto* values : {&s.headers, &s.env}) {
    for (const auto& [k, v] : *values) {
      if (values == &s.headers && (k + v).find_first_of("\r\n") != std::string::npos) {
        Fail("a header with a line break", k);
      }
      if (v.find("${SET}") != std::string::npos) Fail("a reference left unresolved", v);
      if (v.find("value-1") != std::string::npos && !from_file &&
          std::find(secrets.begin(), secrets.end(), "value-1") == secrets.end()) {
        Fail("a variable's value not among the secrets", v);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > mcpexec::upstream::kMaxFile) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<mcpexec::upstream::Spec> specs;
  std::string error;
  const bool ok = mcpexec::upstream::ParseSpecs(text, &specs, &error, Lookup);
  if (ok != error.empty()) Fail("an outcome that is both or neither", error);
  if (!ok) {
    if (error.find("value-1") != std::string::npos && text.find("value-1") == std::string::npos) {
      Fail("an error that shows a variable's value", error);
    }
    return 0;
  }
  const bool from_file = text.find("value-1") != std::string::npos;
  for (const auto& s : specs) CheckSpec(s, from_file);
  return 0;
}
