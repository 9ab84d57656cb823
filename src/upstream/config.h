// MCP_EXEC_UPSTREAMS: the other MCP servers whose tools runs may call, in
// the shape client apps already use for their own servers:
//   {"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}}
//                         | {"url": "http://...", "headers": {...}},
//                   "allow": ["tool", "prefix*"]}}
// (allow sits inside each server's entry; absent: every tool it lists).
#pragma once

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
  std::vector<std::string> allow;  // empty: every tool
  bool allow_all = true;

  bool stdio() const { return !command.empty(); }
  // Every secret of the entry (env and header values), for redaction.
  std::vector<std::string> Secrets() const;
};

// Parses the file's text; on error returns false with a one-line reason that
// names the server entry at fault.
bool ParseSpecs(const std::string& text, std::vector<Spec>* specs, std::string* error);
// Reads and parses the file at path.
bool LoadSpecs(const std::string& path, std::vector<Spec>* specs, std::string* error);

// True when an allow entry admits the tool: an exact name, or a prefix
// ending in '*'.
bool Allowed(const Spec& spec, const std::string& tool);

// A server's or a tool's name as a Python identifier: every character
// outside [A-Za-z0-9_] becomes '_', and a leading digit gets a '_' before it.
std::string PythonName(const std::string& name);

// "http://host:port/path" split; false for anything else (https included:
// an upstream over TLS is not supported, and saying so beats a silent
// plain-text connection).
struct Url {
  std::string host;
  int port = 80;
  std::string target;  // "/mcp"
};
bool ParseUrl(const std::string& url, Url* out, std::string* error);

}  // namespace mcpexec::upstream
