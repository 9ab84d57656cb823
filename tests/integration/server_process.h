// Test harness: starts the built mcp-exec binary and talks MCP to it over
// stdio, like a client. Also process helpers read from /proc.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace mcpexec::testing {

using json = nlohmann::json;
using Env = std::map<std::string, std::string>;

// A uid for the runs of one server this test process starts, its own (as
// root): servers side by side share no process limit and see none of each
// other's processes.
uid_t NewSandboxUid();
// "MCP_EXEC_SANDBOX_UID=<NewSandboxUid()> " for a command line that starts
// the server (or doctor, which starts a zygote) outside ServerProcess, as
// root; "" otherwise (the runs are then the server's own uid).
std::string SandboxUidEnv();

// What a command printed and how it ended.
struct CommandResult {
  int status = -1;  // exit status, or -1 if it did not exit
  std::string out, err;
};
// Runs `env -i PATH=/usr/bin:/bin <SandboxUidEnv()><env_and_args>` (a bare
// environment, so nothing of the test's reaches the server) with stdin from
// stdin_path, to its end; stdout and stderr apart (stderr through a file of
// this test process's own).
CommandResult RunBare(const std::string& env_and_args, const std::string& stdin_path = "/dev/null");

class ServerProcess {
 public:
  // env: added to a minimal environment (PATH). args: server flags.
  // wrapper: a command the binary runs under (e.g. the container posture).
  explicit ServerProcess(const std::map<std::string, std::string>& env = {},
                         const std::vector<std::string>& args = {},
                         const std::vector<std::string>& wrapper = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The uid its runs are (a uid of this server's own when the tests run as
  // root: see the constructor).
  uid_t sandbox_uid() const { return sandbox_uid_; }
  void SendRaw(const std::string& line);  // a newline is added
  void Send(const json& msg) { SendRaw(msg.dump()); }
  // The next message from the server (any id), or nullopt after timeout.
  std::optional<json> Receive(int timeout_ms);
  // Waits for the response with this id; other messages are kept for later.
  json WaitForId(const json& id, int timeout_ms = 120000);
  json Request(const std::string& method, const json& params, int timeout_ms = 120000);
  // initialize and notifications/initialized, then tools/list, as clients
  // do: the server answers initialize during its warm-up and tools/list
  // after it, so the server is warm when this returns. The initialize answer.
  json Initialize(const std::string& version = "2025-06-18");
  // tools/call exec; returns the whole CallToolResult.
  json Call(const json& arguments, int timeout_ms = 120000);
  // tools/call exec that must succeed as a tool call; returns structuredContent.
  json Exec(const std::string& code, const json& extra = json::object());
  int64_t NextId() { return next_id_++; }
  // Sends a tools/call of exec without waiting for its answer.
  void SendCall(const json& id, const json& arguments);
  // Sends a tools/call whose code runs `sleep <marker>` and waits until that
  // process exists. Returns the marker to find it by, or "" if it never ran.
  std::string StartSleepingRun(const json& id, const std::string& prefix, int timeout_s = 120);

  void CloseStdin();
  // Exit status (WEXITSTATUS, or 128+signal), or -1 if it did not exit in time.
  int Wait(int timeout_ms);
  // Whether a Wait() has seen the server end.
  bool exit_seen() const { return exited_; }
  std::string Stderr();
  // Whether the server's stderr holds `needle`, waiting up to timeout_ms for
  // it: stderr is read on a thread of the test's, which may lag behind an
  // answer the server wrote after its log line.
  bool StderrHas(const std::string& needle, int timeout_ms = 5000);
  // The zygote: the server's child started as `__zygote`.
  pid_t ZygotePid() const;

 private:
  pid_t pid_ = -1;
  uid_t sandbox_uid_ = 0;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string out_buf_;
  std::vector<json> pending_;
  int64_t next_id_ = 100;
  bool exited_ = false;
  int exit_status_ = -1;
  std::mutex err_mu_;
  std::string err_text_;
  std::thread err_reader_;
  std::atomic<bool> err_eof_{false};
};

// The system python3's "MAJOR.MINOR" (the embedded interpreter's), or "".
std::string SystemPythonVersion();
// Makes at `dir` a venv as `python3 -m venv` makes it (without pip):
// pyvenv.cfg beside bin/, whose python3 is the system's, and writes `files`
// (path below site-packages -> content) into its site-packages, the folders
// they need made. Use a dir under /var/tmp: runs have a /tmp of their own,
// so a venv there cannot be shown to them. The site-packages path, or "".
std::string MakeVenv(const std::string& dir, const std::map<std::string, std::string>& files);

// The server a suite's tests share where a test needs no configuration of
// its own: one warm-up for the suite instead of one per test. A suite that
// shares one runs its tests in one process (MCP_EXEC_SHARED_SERVER_SUITES in
// tests/CMakeLists.txt; gtest_discover_tests would start one per test). The
// first Get() starts it, as does a Get() after a test left it ended (so one
// test's failure does not fail the rest); the suite's TearDownTestSuite
// calls Release().
class SharedServer {
 public:
  ServerProcess& Get();
  void Release() { server_.reset(); }

 private:
  std::unique_ptr<ServerProcess> server_;
};

// A one-shot run that forks n children and waits for them, printing
// "<n> forked"; retried for 5 s while it fails, since the zygote ends a
// session holding too many processes only once a second. The last result.
json ForkInARun(ServerProcess& s, int n);

// Process helpers (from /proc).
std::vector<pid_t> ChildrenOf(pid_t parent, bool include_zombies);
std::vector<pid_t> PidsWithCmdlineContaining(const std::string& needle);
int CountOpenFds(pid_t pid);
long RssKiB(pid_t pid);
bool ProcessExists(pid_t pid);
bool WaitUntil(const std::function<bool()>& cond, int timeout_ms);
std::string Marker(const std::string& prefix);

}  // namespace mcpexec::testing
