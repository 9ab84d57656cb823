#include "server_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>

#include "test_binary.h"

namespace mcpexec::testing {

using Clock = std::chrono::steady_clock;

namespace {
// A /proc file's text, or "" when the process is gone (it may vanish between
// open and read: ESRCH, which std::ifstream turns into an exception).
std::string ReadProcFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, n);
  close(fd);
  return out;
}

}  // namespace

uid_t NewSandboxUid() {
  // 64 per test process, one per server it starts (a fifth live server
  // shared an earlier one's uid when there were four), wrapping after 64:
  // at pid_max 2^22 the largest is below 2^29, far from 2^31, and above the
  // 20000000 + pid that SandboxUidTest names.
  static std::atomic<uint32_t> started{0};
  return 100000000 + static_cast<uid_t>(getpid()) * 64 + started++ % 64;
}

std::string SandboxUidEnv() {
  return geteuid() == 0 ? "MCP_EXEC_SANDBOX_UID=" + std::to_string(NewSandboxUid()) + " " : "";
}

CommandResult RunBare(const std::string& env_and_args, const std::string& stdin_path) {
  static std::atomic<uint32_t> commands{0};
  const std::string err_path =
      "/tmp/mcp-exec-test-err." + std::to_string(getpid()) + "." + std::to_string(commands++);
  const std::string cmd = "env -i PATH=/usr/bin:/bin " + SandboxUidEnv() + env_and_args + " <" +
                          stdin_path + " 2>" + err_path;
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (FILE* e = fopen(err_path.c_str(), "r")) {
    while ((n = fread(buf.data(), 1, buf.size(), e)) > 0) r.err.append(buf.data(), n);
    fclose(e);
  }
  unlink(err_path.c_str());
  return r;
}

ServerProcess::ServerProcess(const std::map<std::string, std::string>& env,
                             const std::vector<std::string>& args,
                             const std::vector<std::string>& wrapper) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    throw std::runtime_error("pipe");
  }
  std::vector<std::string> envs = {"PATH=/usr/local/bin:/usr/bin:/bin"};
  for (const char* pass : {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}) {
    if (const char* v = getenv(pass)) envs.push_back(std::string(pass) + "=" + v);
  }
  for (auto& [k, v] : env) envs.push_back(k + "=" + v);
  // Each server's runs get a uid of their own, so that tests run side by
  // side: RLIMIT_NPROC counts every process of a uid, and one test's fork
  // bomb at its limit would fail another's forks. As root the server makes
  // its runs that uid (MCP_EXEC_SANDBOX_UID); in the container postures the
  // server itself is that uid (scripts/container-posture), and so are its
  // runs. A test that names the variable keeps its own.
  if (geteuid() != 0) {
    sandbox_uid_ = geteuid();
  } else if (auto named = env.find("MCP_EXEC_SANDBOX_UID"); named != env.end()) {
    sandbox_uid_ = static_cast<uid_t>(std::stoul(named->second));
  } else {
    sandbox_uid_ = NewSandboxUid();
    envs.push_back((wrapper.empty() ? "MCP_EXEC_SANDBOX_UID=" : "CONTAINER_POSTURE_UID=") +
                   std::to_string(sandbox_uid_));
  }
  std::vector<std::string> argv_s = wrapper;
  argv_s.push_back(ServerBinary());
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  pid_ = fork();
  if (pid_ == 0) {
    // A test binary that crashes must not leave its server behind (an HTTP
    // server does not end on stdin's EOF). Tests create servers on their
    // main thread, whose end is the process's.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    std::vector<char*> argv, envp;
    for (auto& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (auto& s : envs) envp.push_back(s.data());
    envp.push_back(nullptr);
    execve(argv_s[0].c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  in_ = in[1];
  out_ = out[0];
  err_ = err[0];
  err_reader_ = std::thread([this] {
    char buf[4096];
    ssize_t n;
    while ((n = read(err_, buf, sizeof buf)) > 0) {
      std::lock_guard<std::mutex> lock(err_mu_);
      err_text_.append(buf, n);
    }
    err_eof_ = true;
  });
}

ServerProcess::~ServerProcess() {
  CloseStdin();
  if (Wait(30000) < 0) {
    kill(pid_, SIGKILL);
    Wait(10000);
  }
  if (err_reader_.joinable()) err_reader_.join();
  if (out_ >= 0) close(out_);
  if (err_ >= 0) close(err_);
}

void ServerProcess::SendRaw(const std::string& line) {
  std::string s = line + "\n";
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(in_, s.data() + off, s.size() - off);
    if (n <= 0) throw std::runtime_error("write to server stdin failed");
    off += n;
  }
}

std::optional<json> ServerProcess::Receive(int timeout_ms) {
  if (!pending_.empty()) {
    json m = pending_.front();
    pending_.erase(pending_.begin());
    return m;
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto nl = out_buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = out_buf_.substr(0, nl);
      out_buf_.erase(0, nl + 1);
      return json::parse(line);  // stdout must carry protocol messages only
    }
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, left) <= 0) continue;
    char buf[65536];
    ssize_t n = read(out_, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    out_buf_.append(buf, n);
  }
}

json ServerProcess::WaitForId(const json& id, int timeout_ms) {
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].value("id", json()) == id) {
      json m = pending_[i];
      pending_.erase(pending_.begin() + i);
      return m;
    }
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<json> others;
  json found;
  while (Clock::now() < deadline) {
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    auto m = Receive(left);
    if (!m) break;
    if (m->value("id", json()) == id) {
      found = *m;
      break;
    }
    others.push_back(*m);
  }
  pending_.insert(pending_.end(), others.begin(), others.end());
  if (found.is_null()) throw std::runtime_error("no response with id " + id.dump());
  return found;
}

json ServerProcess::Request(const std::string& method, const json& params, int timeout_ms) {
  json id = NextId();
  Send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  return WaitForId(id, timeout_ms);
}

json ServerProcess::Initialize(const std::string& version) {
  json r =
      Request("initialize", {{"protocolVersion", version},
                             {"capabilities", json::object()},
                             {"clientInfo", {{"name", "integration-test"}, {"version", "1"}}}});
  Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  if (r.contains("result")) Request("tools/list", json::object());
  return r;
}

json ServerProcess::Call(const json& arguments, int timeout_ms) {
  json r = Request("tools/call", {{"name", "exec"}, {"arguments", arguments}}, timeout_ms);
  if (!r.contains("result")) throw std::runtime_error("JSON-RPC error: " + r.dump());
  return r["result"];
}

json ServerProcess::Exec(const std::string& code, const json& extra) {
  json args = extra;
  args["code"] = code;
  json r = Call(args);
  if (r.value("isError", false)) throw std::runtime_error("tool error: " + r.dump());
  return r["structuredContent"];
}

void ServerProcess::SendCall(const json& id, const json& arguments) {
  Send({{"jsonrpc", "2.0"},
        {"id", id},
        {"method", "tools/call"},
        {"params", {{"name", "exec"}, {"arguments", arguments}}}});
}

std::string ServerProcess::StartSleepingRun(const json& id, const std::string& prefix,
                                            int timeout_s) {
  std::string marker = prefix + "." + Marker("");
  SendCall(id, {{"code", "import subprocess; subprocess.run(['sleep', '" + marker + "'])"},
                {"timeout_s", timeout_s}});
  bool running = WaitUntil([&] { return !PidsWithCmdlineContaining(marker).empty(); }, 20000);
  return running ? marker : "";
}

void ServerProcess::CloseStdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

std::string SystemPythonVersion() {
  FILE* p = popen("/usr/bin/python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'", "r");
  if (p == nullptr) return "";
  char buf[32] = {0};
  const bool read = fgets(buf, sizeof buf, p) != nullptr;
  pclose(p);
  const std::string line = read ? buf : "";
  return line.substr(0, line.find('\n'));
}

std::string MakeVenv(const std::string& dir, const std::map<std::string, std::string>& files) {
  const std::string version = SystemPythonVersion();
  if (version.empty()) return "";
  const std::string site = dir + "/lib/python" + version + "/site-packages";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir + "/bin", ec);
  std::filesystem::create_directories(site, ec);
  std::filesystem::create_symlink("/usr/bin/python3", dir + "/bin/python3", ec);
  if (ec) return "";
  std::ofstream(dir + "/pyvenv.cfg") << "home = /usr/bin\n";
  for (const auto& [path, content] : files) {
    const std::string where = site + "/" + path;
    std::filesystem::create_directories(std::filesystem::path(where).parent_path(), ec);
    std::ofstream out(where);
    out << content;
    if (ec || !out) return "";
  }
  return site;
}

ServerProcess& SharedServer::Get() {
  if (!server_ || server_->Wait(0) >= 0) {
    server_ = std::make_unique<ServerProcess>();
    server_->Initialize();
  }
  return *server_;
}

int ServerProcess::Wait(int timeout_ms) {
  if (exited_) return exit_status_;
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {  // looks once at least: Wait(0) says whether it has exited
    int status;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      // What the server wrote to stderr before it ended is all there for
      // Stderr() once its reader has seen the end (bounded: a process the
      // server left behind could still hold the pipe).
      WaitUntil([&] { return err_eof_.load(); }, 2000);
      return exit_status_;
    }
    if (Clock::now() >= deadline) return -1;
    usleep(5000);
  }
}

std::string ServerProcess::Stderr() {
  std::lock_guard<std::mutex> lock(err_mu_);
  return err_text_;
}

bool ServerProcess::StderrHas(const std::string& needle, int timeout_ms) {
  return WaitUntil([&] { return Stderr().find(needle) != std::string::npos; }, timeout_ms);
}

pid_t ServerProcess::ZygotePid() const {
  for (pid_t c : ChildrenOf(pid_, false)) {
    if (ReadProcFile("/proc/" + std::to_string(c) + "/cmdline").find("__zygote") !=
        std::string::npos) {
      return c;
    }
  }
  return -1;
}

namespace {
bool ReadStat(pid_t pid, pid_t* ppid, char* state) {
  std::string s = ReadProcFile("/proc/" + std::to_string(pid) + "/stat");
  auto rp = s.rfind(')');
  if (rp == std::string::npos) return false;
  std::istringstream rest(s.substr(rp + 2));
  rest >> *state >> *ppid;
  return true;
}

template <typename F>
void ForEachPid(F f) {
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') f(static_cast<pid_t>(atoi(e->d_name)));
  }
  closedir(d);
}
}  // namespace

std::vector<pid_t> ChildrenOf(pid_t parent, bool include_zombies) {
  std::vector<pid_t> out;
  ForEachPid([&](pid_t pid) {
    pid_t ppid;
    char state;
    if (ReadStat(pid, &ppid, &state) && ppid == parent && (include_zombies || state != 'Z')) {
      out.push_back(pid);
    }
  });
  return out;
}

std::vector<pid_t> PidsWithCmdlineContaining(const std::string& needle) {
  std::vector<pid_t> out;
  ForEachPid([&](pid_t pid) {
    std::string cmd = ReadProcFile("/proc/" + std::to_string(pid) + "/cmdline");
    pid_t ppid;
    char state;
    if (cmd.find(needle) != std::string::npos && ReadStat(pid, &ppid, &state) && state != 'Z' &&
        pid != getpid()) {
      out.push_back(pid);
    }
  });
  return out;
}

int CountOpenFds(pid_t pid) {
  int n = 0;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (!d) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

long RssKiB(pid_t pid) {
  std::istringstream f(ReadProcFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

bool ProcessExists(pid_t pid) { return kill(pid, 0) == 0; }

bool WaitUntil(const std::function<bool()>& cond, int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < deadline) {
    if (cond()) return true;
    usleep(10000);
  }
  return cond();
}

std::string Marker(const std::string& prefix) {
  static std::mt19937_64 rng(std::random_device{}());
  // Nine digits always: "4600123" can never be a prefix of another marker.
  char digits[16];
  snprintf(digits, sizeof digits, "%09llu", static_cast<unsigned long long>(rng() % 1000000000ull));
  return prefix + digits;
}

json ForkInARun(ServerProcess& s, int n) {
  const std::string code = "import os\npids = []\ntry:\n    for _ in range(" + std::to_string(n) +
                           "):\n        pid = os.fork()\n        if pid == 0:\n"
                           "            os._exit(0)\n        pids.append(pid)\nfinally:\n"
                           "    for pid in pids:\n        os.waitpid(pid, 0)\n"
                           "print(len(pids), \"forked\")\n";
  json r;
  for (int attempt = 0; attempt < 10; ++attempt) {
    r = s.Exec(code);
    if (r["exit_code"] == 0) break;
    usleep(500 * 1000);
  }
  return r;
}

}  // namespace mcpexec::testing
