#include "base/python_env.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "base/unique_fd.h"

namespace mcpexec::python_env {
namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The program to run for `value`, or "" (then *why says why).
std::string Resolve(const std::string& value, const std::string& path_env, std::string* why) {
  if (IsDirectory(value)) {
    for (const char* name : {"/bin/python3", "/bin/python"}) {
      if (IsExecutableFile(value + name)) return value + name;
    }
    *why = "is a folder without bin/python3: not a virtual environment";
    return "";
  }
  if (value.find('/') != std::string::npos) {
    if (IsExecutableFile(value)) return value;
    *why = "is not an executable file or a virtual environment's folder";
    return "";
  }
  size_t start = 0;
  while (start <= path_env.size()) {
    size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    const std::string dir = path_env.substr(start, end - start);
    if (!dir.empty() && IsExecutableFile(dir + "/" + value)) return dir + "/" + value;
    start = end + 1;
  }
  *why = "is not found on PATH";
  return "";
}

// What the interpreter prints: its version and site-packages folders.
constexpr const char* kAsk =
    "import json, site, sys\n"
    "paths = site.getsitepackages() if hasattr(site, 'getsitepackages') else []\n"
    "print(json.dumps({'version': '%d.%d' % sys.version_info[:2], 'site': paths}))\n";

// Runs program -I -c kAsk; its stdout, or "" and *why.
std::string Ask(const std::string& program, std::string* why) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *why = "cannot make a pipe to ask it";
    return "";
  }
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::string isolated = "-I", command = "-c", code = kAsk;
  char* argv[] = {const_cast<char*>(program.c_str()), isolated.data(), command.data(), code.data(),
                  nullptr};
  // Only PATH: the server's environment (its token) is not the probe's.
  std::string path = "PATH=/usr/local/bin:/usr/bin:/bin";
  char* envp[] = {path.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  write_end.Reset();
  if (rc != 0) {
    *why = "cannot be run";
    return "";
  }
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    pollfd p{read_end.get(), POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      *why = "did not answer within 10 s";
      return "";
    }
    char buf[4096];
    const ssize_t n = read(read_end.get(), buf, sizeof buf);
    if (n <= 0 || out.size() > (1 << 20)) break;
    out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *why = "failed when asked for its version (is it a Python interpreter?)";
    return "";
  }
  return out;
}

}  // namespace

std::string Probe(const std::string& value, const std::string& path_env, Found* out) {
  std::string why;
  const std::string program = Resolve(value, path_env, &why);
  if (program.empty()) return why;
  const std::string answer = Ask(program, &why);
  if (answer.empty()) return why.empty() ? "gave no answer" : why;
  out->interpreter = program;
  try {
    const nlohmann::json j = nlohmann::json::parse(answer);
    out->version = j.at("version").get<std::string>();
    for (const auto& p : j.at("site")) {
      const std::string dir = p.get<std::string>();
      char real[PATH_MAX];
      if (!realpath(dir.c_str(), real) || !IsDirectory(real)) continue;
      const std::string canonical = real;
      if (canonical.find(':') != std::string::npos) continue;  // the list's separator
      bool seen = false;
      for (const auto& s : out->site) seen = seen || s == canonical;
      if (!seen) out->site.push_back(canonical);
    }
  } catch (const nlohmann::json::exception&) {
    return "answered something that is not its version (is it a Python interpreter?)";
  }
  return "";
}

std::string Compatible(const Found& found, const std::string& embedded) {
  if (found.version == embedded) return "";
  return "is Python " + found.version + " (" + found.interpreter +
         "), but runs use the embedded Python " + embedded + ": packages installed for " +
         found.version + " (compiled ones above all) do not load in " + embedded +
         ". Make the environment with python" + embedded + " (python" + embedded +
         " -m venv DIR), or leave MCP_EXEC_PYTHON unset";
}

}  // namespace mcpexec::python_env
