// MCP_EXEC_UPSTREAMS: the other MCP servers whose tools runs may call, in
// the shape client apps already use for their own servers:
//   {"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}}
//                         | {"url": "https://...", "headers": {...},
//                            "ca": "file.pem"},
//                   "allow": ["tool", "prefix*"]}}
// (allow sits inside each server's entry; absent: every tool it lists).
// A value of "env" or "headers" may name the server's own environment
// variables, as the client apps' configs do: "Bearer ${GITHUB_TOKEN}", or
// ${NAME:-default}. They are resolved when the file is read; a variable
// that is not set (and has no default) stops the start, naming it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace mcpexec::upstream {

struct Spec {
  std::string name;
  // stdio: the command, its arguments and the environment it gets besides
  // PATH, HOME and LANG (never the server's own, never a run's).
  std::string command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  // Streamable HTTP: the endpoint and the headers sent with every request.
  std::string url;
  std::map<std::string, std::string> headers;
  // https: the PEM file of the CAs that alone are trusted for this server
  // (resolved against the upstreams file's folder); empty: the system's
  // CA store.
  std::string ca;
  std::vector<std::string> allow;  // empty: every tool
  bool allow_all = true;

  bool stdio() const { return !command.empty(); }
  // Every secret of the entry (env and header values, and the values of
  // the variables they named), for redaction.
  std::vector<std::string> Secrets() const;
  // The credentials among them, masked in what a run gets (results,
  // errors): the header values and what ${NAME}s resolved to, of at least
  // 8 characters. Not a literal env value: "true" or "text" would mangle
  // every result.
  std::vector<std::string> Credentials() const;
  std::vector<std::string> referenced;  // the values ${NAME} resolved to
};

// The server's environment as the file's ${NAME} references see it.
using Lookup = std::function<const char*(const std::string& name)>;
const char* ProcessEnvironment(const std::string& name);

// Parses the file's text; on error returns false with a one-line reason that
// names the server entry at fault.
bool ParseSpecs(const std::string& text, std::vector<Spec>* specs, std::string* error,
                const Lookup& lookup = ProcessEnvironment);
// Reads and parses the file at path (at most kMaxFile bytes); a relative
// "ca" is taken from the file's folder.
inline constexpr size_t kMaxFile = size_t{1} << 20;
bool LoadSpecs(const std::string& path, std::vector<Spec>* specs, std::string* error);

// True when an allow entry admits the tool: an exact name, or a prefix
// ending in '*'.
bool Allowed(const Spec& spec, const std::string& tool);

// A server's or a tool's name as a Python identifier: every character
// outside [A-Za-z0-9_] becomes '_', and a leading digit gets a '_' before it.
std::string PythonName(const std::string& name);

// "http://host:port/path" or "https://..." split; false for anything else.
struct Url {
  std::string host;
  int port = 80;       // 443 for https unless given
  std::string target;  // "/mcp"
  bool tls = false;    // https
};
bool ParseUrl(const std::string& url, Url* out, std::string* error);

}  // namespace mcpexec::upstream
