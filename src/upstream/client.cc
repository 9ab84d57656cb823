#include "upstream/client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "base/version.h"
#include "protocol/eras.h"
#include "protocol/jsonrpc.h"
#include "protocol/stateless.h"
#include "upstream/framing.h"
#include "upstream/http_link.h"

namespace mcpexec::upstream {

namespace {

constexpr size_t kStderrTail = 4096;

}  // namespace

std::string Mask(const std::string& text, const std::vector<std::string>& secrets) {
  std::string out = text;
  for (const std::string& s : secrets) {
    if (s.empty() || out.find(s) == std::string::npos) continue;
    // One pass: what is kept, with *** where the secret was.
    std::string next;
    next.reserve(out.size());
    size_t from = 0;
    for (size_t at = out.find(s); at != std::string::npos; at = out.find(s, from)) {
      next.append(out, from, at - from).append("***");
      from = at + s.size();
    }
    next.append(out, from, std::string::npos);
    out = std::move(next);
  }
  return out;
}

void MaskStrings(nlohmann::json* value, const std::vector<std::string>& secrets) {
  if (secrets.empty()) return;
  // Every string in the value (not its keys), walked with a stack of its
  // own: the value's depth is bounded when it is parsed, and never recursed.
  std::vector<nlohmann::json*> pending = {value};
  while (!pending.empty()) {
    nlohmann::json* v = pending.back();
    pending.pop_back();
    if (v->is_string()) {
      const std::string& s = v->get_ref<const std::string&>();
      std::string masked = Mask(s, secrets);
      if (masked != s) *v = std::move(masked);
    } else if (v->is_structured()) {
      for (auto& item : *v) pending.push_back(&item);
    }
  }
}

namespace {

// Writes all of data to a non-blocking fd by the deadline.
bool WriteAll(int fd, const std::string& data, Clock::time_point deadline, std::string* error) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) {
      *error = std::string("write: ") + strerror(errno);
      return false;
    }
    pollfd p{fd, POLLOUT, 0};
    int ms = MillisUntil(deadline);
    if (ms == 0 || poll(&p, 1, ms) == 0) {
      *error = "it did not read its input in time";
      return false;
    }
  }
  return true;
}

}  // namespace

// --- stdio ---

StdioLink::StdioLink(const Spec& spec) : spec_(spec) {}

StdioLink::~StdioLink() {
  if (stop_) {
    uint64_t one = 1;
    (void)!write(stop_.get(), &one, sizeof one);
  }
  if (reader_.joinable()) reader_.join();
  in_.Reset();
  if (pid_ > 0) {
    // Its stdin closed: a well-behaved server exits (a pidfd says when, up
    // to 200 ms). The rest are killed, with whatever they started (their
    // own process group).
    UniqueFd exited(static_cast<int>(syscall(SYS_pidfd_open, pid_, 0)));
    pollfd p{exited.get(), POLLIN, 0};
    if (exited) poll(&p, 1, 200);
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool StdioLink::Start(std::string* error) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + strerror(errno);
    return false;
  }
  UniqueFd in_r(in[0]), out_w(out[1]), err_w(err[1]);
  in_.Reset(in[1]);
  out_.Reset(out[0]);
  err_.Reset(err[0]);
  stop_.Reset(eventfd(0, EFD_CLOEXEC));
  // Everything the child needs, built before fork (the supervisor has
  // threads: the child may only call async-signal-safe functions).
  std::vector<std::string> env_strings;
  for (const char* keep : {"PATH", "HOME", "LANG", "TMPDIR"}) {
    if (const char* v = getenv(keep); v && !spec_.env.count(keep)) {
      env_strings.push_back(std::string(keep) + "=" + v);
    }
  }
  for (const auto& [k, v] : spec_.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string command = spec_.command;
  std::vector<std::string> args = spec_.args;
  argv.push_back(command.data());
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + strerror(errno);
    return false;
  }
  if (pid == 0) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    if (dup2(in_r.get(), 0) < 0 || dup2(out_w.get(), 1) < 0 || dup2(err_w.get(), 2) < 0) _exit(127);
    syscall(SYS_close_range, 3U, ~0U, 0U);
    // execvpe looks the command up in the supervisor's PATH.
    execvpe(argv[0], argv.data(), envp.data());
    const char msg[] = "mcp-exec: cannot execute the upstream's command\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  pid_ = pid;
  fcntl(in_.get(), F_SETFL, O_NONBLOCK);
  reader_ = std::thread([this] { ReadLoop(); });
  return true;
}

void StdioLink::Abort() {
  std::lock_guard<std::mutex> lock(mu_);
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
  }
}

bool StdioLink::Alive() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !dead_;
}

std::string StdioLink::StderrTail() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string t = stderr_tail_;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  return Mask(t, spec_.Secrets());
}

bool StdioLink::Write(const std::string& line, Clock::time_point deadline, std::string* error) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return WriteAll(in_.get(), line, deadline, error);
}

void StdioLink::Answer(const nlohmann::json& request) {
  // A server's requests to its client: ping is answered; sampling, roots,
  // elicitation are not offered (the capabilities said so).
  const nlohmann::json reply = request.value("method", "") == "ping"
                                   ? jsonrpc::Result(request["id"], nlohmann::json::object())
                                   : jsonrpc::Error(request["id"], jsonrpc::kMethodNotFound,
                                                    "mcp-exec does not offer this to upstreams");
  std::string error;
  Write(reply.dump() + "\n", Clock::now() + std::chrono::seconds(5), &error);
}

void StdioLink::ReadLoop() {
  LineFramer framer;
  char chunk[65536];
  bool out_open = true, err_open = true;
  std::string why;
  while (out_open) {
    pollfd p[3] = {
        {out_.get(), POLLIN, 0}, {err_open ? err_.get() : -1, POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[2].revents) return;  // the destructor: it reaps
    if (p[1].revents) {
      ssize_t n = read(err_.get(), chunk, sizeof chunk);
      if (n <= 0) {
        err_open = false;
      } else {
        std::lock_guard<std::mutex> lock(mu_);
        stderr_tail_.append(chunk, static_cast<size_t>(n));
        if (stderr_tail_.size() > kStderrTail)
          stderr_tail_.erase(0, stderr_tail_.size() - kStderrTail);
      }
    }
    if (!p[0].revents) continue;
    ssize_t n = read(out_.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const bool whole = framer.Feed(chunk, static_cast<size_t>(n), [&](std::string_view line) {
      nlohmann::json m = ParseMessage(line);
      if (m.is_discarded() || !m.is_object()) return;  // a log line on stdout: skipped
      if (IsResponse(m) && m["id"].is_number_integer()) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = waiting_.find(m["id"].get<int64_t>());
        if (it != waiting_.end()) {
          it->second = std::move(m);
          cv_.notify_all();
        }
      } else if (m.contains("method") && m.contains("id")) {
        Answer(m);
      } else if (IsToolsChanged(m) && on_tools_changed) {
        on_tools_changed();
      }
    });
    if (!whole) {
      why = "it sent a message of more than 64 MiB";
      kill(-pid_, SIGKILL);
      kill(pid_, SIGKILL);
      break;
    }
  }
  int status = 0;
  pid_t reaped = waitpid(pid_, &status, 0);
  std::lock_guard<std::mutex> lock(mu_);
  if (reaped == pid_) pid_ = -1;
  if (why.empty()) {
    if (reaped < 0) {
      why = "it closed its stdout";
    } else if (WIFSIGNALED(status)) {
      why = "it was ended by signal " + std::to_string(WTERMSIG(status));
    } else {
      why = "it exited with status " + std::to_string(WEXITSTATUS(status));
    }
  }
  exit_text_ = why;
  dead_ = true;
  cv_.notify_all();
}

std::optional<nlohmann::json> StdioLink::Request(const nlohmann::json& request,
                                                 Clock::time_point deadline, std::string* error) {
  const int64_t id = request["id"].get<int64_t>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (dead_) {
      *error = exit_text_;
      return std::nullopt;
    }
    waiting_[id] = std::nullopt;
  }
  if (!Write(request.dump() + "\n", deadline, error)) {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.erase(id);
    return std::nullopt;
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline, [&] { return dead_ || waiting_[id].has_value(); });
  std::optional<nlohmann::json> answer = std::move(waiting_[id]);
  waiting_.erase(id);
  if (!answer) *error = dead_ ? exit_text_ : "it did not answer in time";
  return answer;
}

void StdioLink::Notify(const nlohmann::json& notification) {
  std::string error;
  Write(notification.dump() + "\n", Clock::now() + std::chrono::seconds(5), &error);
}

// --- the client ---

Client::Client(Spec spec) : spec_(std::move(spec)) {}
Client::~Client() = default;

std::optional<nlohmann::json> Client::Rpc(Link& link, const std::string& method,
                                          nlohmann::json params, Clock::time_point deadline,
                                          std::string* error) {
  int64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
  }
  if (stateless_) {
    params["_meta"][eras::kMetaProtocolVersion] = eras::kStatelessVersion;
    params["_meta"][stateless::kMetaClientCapabilities] = nlohmann::json::object();
    params["_meta"][stateless::kMetaClientInfo] = {{"name", "mcp-exec"},
                                                   {"version", MCP_EXEC_VERSION}};
  }
  nlohmann::json req = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
  std::optional<nlohmann::json> answer = link.Request(req, deadline, error);
  if (!answer) return std::nullopt;
  if (answer->contains("error")) {
    const nlohmann::json& e = (*answer)["error"];
    *error = "it answered " + method + " with error " +
             (e.is_object() ? std::to_string(e.value("code", 0)) + ": " + e.value("message", "")
                            : e.dump());
    return std::nullopt;
  }
  return (*answer)["result"];
}

bool Client::Connect(std::shared_ptr<Link>* out, Clock::time_point deadline, std::string* error) {
  std::shared_ptr<Link> link;
  std::shared_ptr<StdioLink> stdio;
  if (spec_.stdio()) {
    stdio = std::make_shared<StdioLink>(spec_);
    stdio->on_tools_changed = [this] { tools_changed_ = true; };
    if (!stdio->Start(error)) return false;
    link = stdio;
  } else {
    link = std::make_shared<HttpLink>(spec_);
    link->on_tools_changed = [this] { tools_changed_ = true; };
  }
  auto fail = [&](const std::string& what) {
    *error = Mask(what + ": " + *error, spec_.Secrets());
    if (stdio) {
      std::string tail = stdio->StderrTail();
      if (!tail.empty())
        *error +=
            "; its stderr ended with: " + tail.substr(tail.size() > 600 ? tail.size() - 600 : 0);
    }
    return false;
  };
  stateless_ = false;
  nlohmann::json init = {{"protocolVersion", eras::kLegacyVersions.front()},
                         {"capabilities", nlohmann::json::object()},
                         {"clientInfo", {{"name", "mcp-exec"}, {"version", MCP_EXEC_VERSION}}}};
  std::string init_error;
  std::optional<nlohmann::json> r = Rpc(*link, "initialize", init, deadline, &init_error);
  if (r && r->contains("protocolVersion") && (*r)["protocolVersion"].is_string()) {
    legacy_version_ = (*r)["protocolVersion"].get<std::string>();
    if (auto* http = dynamic_cast<HttpLink*>(link.get())) http->SetProtocolVersion(legacy_version_);
    link->Notify({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  } else {
    // A stateless server (2026-07-28) has no initialize.
    if (!link->Alive()) {
      *error = init_error;
      return fail("initialize failed");
    }
    stateless_ = true;
    if (auto* http = dynamic_cast<HttpLink*>(link.get()))
      http->SetProtocolVersion(eras::kStatelessVersion);
    std::string discover_error;
    if (!Rpc(*link, "server/discover", nlohmann::json::object(), deadline, &discover_error)) {
      stateless_ = false;
      *error = init_error;
      return fail("initialize failed");
    }
  }
  tools_changed_ = false;
  std::optional<nlohmann::json> tools = List(*link, deadline, error);
  if (!tools) return fail("tools/list failed");
  {
    std::lock_guard<std::mutex> lock(mu_);
    tools_ = std::move(*tools);
  }
  *out = std::move(link);
  return true;
}

std::optional<nlohmann::json> Client::List(Link& link, Clock::time_point deadline,
                                           std::string* error) {
  nlohmann::json tools = nlohmann::json::array();
  nlohmann::json params = nlohmann::json::object();
  for (int page = 0; page < 100; ++page) {
    std::optional<nlohmann::json> list = Rpc(link, "tools/list", params, deadline, error);
    if (!list) return std::nullopt;
    if (list->contains("tools") && (*list)["tools"].is_array()) {
      for (auto& t : (*list)["tools"]) {
        if (t.is_object() && t.contains("name") && t["name"].is_string()) tools.push_back(t);
      }
    }
    if (!list->contains("nextCursor") || !(*list)["nextCursor"].is_string()) break;
    params["cursor"] = (*list)["nextCursor"];
  }
  return tools;
}

nlohmann::json Client::tools() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tools_;
}

bool Client::Relist(Clock::time_point deadline, std::string* error) {
  std::shared_ptr<Link> link = Live(deadline, error);
  if (!link) return false;
  tools_changed_ = false;  // a change while listing lists again next time
  std::optional<nlohmann::json> tools = List(*link, deadline, error);
  if (!tools) {
    tools_changed_ = true;
    *error = Mask(*error, spec_.Secrets());
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  tools_ = std::move(*tools);
  return true;
}

bool Client::Start(Clock::time_point deadline, std::string* error) {
  std::shared_ptr<Link> link;
  if (!Connect(&link, deadline, error)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  link_ = std::move(link);
  return true;
}

// The link, started again when a stdio server died (at most once a second).
std::shared_ptr<Link> Client::Live(Clock::time_point deadline, std::string* error) {
  std::unique_lock<std::mutex> lock(mu_);
  if (aborted_) {
    *error = "the server is shutting down";
    return nullptr;
  }
  if (link_ && link_->Alive()) return link_;
  // A server that dies as soon as it starts is not started again more than
  // once a second.
  if (spec_.stdio() && Clock::now() - last_restart_ < std::chrono::seconds(1)) {
    *error = "it stopped again right after a restart; call again in a second";
    return nullptr;
  }
  last_restart_ = Clock::now();
  ++restarts_;
  lock.unlock();
  log::Info("upstream_restart", {{"upstream", spec_.name}, {"restarts", restarts_}});
  std::shared_ptr<Link> link;
  const nlohmann::json tools_before = tools();
  if (!Connect(&link, deadline, error)) {
    *error = "it stopped and could not be restarted (" + *error + ")";
    return nullptr;
  }
  // The restarted server's list, if it differs, reaches the catalog the
  // way a list_changed notice does.
  if (tools() != tools_before) tools_changed_ = true;
  lock.lock();
  link_ = link;
  return link;
}

void Client::Abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  if (link_) link_->Abort();
}

CallResult Client::Call(const std::string& tool, const nlohmann::json& arguments,
                        Clock::time_point deadline) {
  CallResult out{};
  std::shared_ptr<Link> link = Live(deadline, &out.error);
  if (!link) return out;
  const nlohmann::json params = {{"name", tool}, {"arguments", arguments}};
  std::optional<nlohmann::json> r = Rpc(*link, "tools/call", params, deadline, &out.error);
  if (!r && !spec_.stdio() && !link->Alive()) {
    // The HTTP server forgot our session (restarted, or expired it): one
    // new handshake, then the call again.
    out.error.clear();
    link = Live(deadline, &out.error);
    if (!link) return out;
    r = Rpc(*link, "tools/call", params, deadline, &out.error);
  }
  if (!r) {
    out.error = Mask(out.error, spec_.Credentials());
    return out;
  }
  out.bytes = static_cast<int64_t>(r->dump().size());
  out.result = std::move(*r);
  out.ok = true;
  return out;
}

}  // namespace mcpexec::upstream
