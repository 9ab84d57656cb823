// MCP_EXEC_PYTHON: how Go mcp-exec users add packages (a venv, or another
// interpreter). The interpreter here is embedded, so the setting cannot pick
// it; what it can do is lend its packages: an interpreter (or venv) of the
// embedded Python's MAJOR.MINOR has its site-packages folders added to the
// runs (read-only, after the system's), and one of another version is a
// start error that says why (its compiled packages would not load).
#pragma once

#include <string>
#include <vector>

namespace mcpexec::python_env {

struct Found {
  std::string interpreter;        // the program that was asked
  std::string version;            // its MAJOR.MINOR
  std::vector<std::string> site;  // its site-packages folders that exist, canonical
};

// value: a venv's folder, an interpreter's path, or a name on PATH. Runs the
// interpreter once (isolated mode, at most 10 s) to ask its version and its
// site-packages folders. "" or why not, in words for the operator.
std::string Probe(const std::string& value, const std::string& path_env, Found* out);

// "" when `found` can lend its packages to the embedded Python `embedded`
// (MAJOR.MINOR), else why not.
std::string Compatible(const Found& found, const std::string& embedded);

}  // namespace mcpexec::python_env
