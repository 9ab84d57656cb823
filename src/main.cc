// mcp-exec: the supervisor. It spawns the zygote before it has any thread,
// then serves MCP on the configured transport while the zygote warms up.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "base/call_pool.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/version.h"
#include "model/config.h"
#include "resources/reads.h"
#include "supervisor/doctor.h"
#include "supervisor/executor.h"
#include "supervisor/scheduler.h"
#include "supervisor/zygote_client.h"
#include "tool/contract.h"
#include "tool/exec_backend.h"
#include "tool/task_options.h"
#include "tool/warm_up_gate.h"
#include "transport/http_policy.h"
#include "transport/http_transport.h"
#include "transport/stdio_transport.h"
#include "upstream/upstreams.h"
#include "zygote/zygote.h"

using namespace mcpexec;

namespace {

// Termination signals are read from a signalfd by the transport; they are
// blocked before any thread exists so that every thread inherits the mask.
int TerminationSignalFd() {
  signal(SIGPIPE, SIG_IGN);
  sigset_t term;
  sigemptyset(&term);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&term, s);
  sigprocmask(SIG_BLOCK, &term, nullptr);
  return signalfd(-1, &term, SFD_CLOEXEC);
}

// What the operator set that does not take effect as written.
void WarnAboutConfig(const Config& config, const RuntimeReport& runtime) {
  for (const std::string& w : config.warnings) log::Warn("config", {{"why", w}});
  if (config.python != Config{}.python) {
    log::Info("python_site",
              {{"variable", "MCP_EXEC_PYTHON"},
               {"value", config.python},
               {"site", config.python_site},
               {"why", "the interpreter is embedded (Python " + runtime.python_version +
                           "); runs may import these folders' packages too"}});
  }
  // A read-only folder whose chmod and utime only the files' ownership
  // guards (no mount namespace, and the host's mount is writable).
  try {
    for (const auto& m : runtime.sandbox.value("mounts", nlohmann::json::array())) {
      if (m.value("metadata_guarded", true)) continue;
      log::Warn("mount_metadata", {{"variable", "MCP_EXEC_MOUNTS"},
                                   {"path", m.value("path", "")},
                                   {"why", m.value("how", "")}});
    }
  } catch (const nlohmann::json::exception& e) {
    log::Warn("mount_report",
              {{"why", std::string("the zygote's report of the mounts: ") + e.what()}});
  }
}

void LogStart(const Config& config, const RuntimeReport& runtime) {
  std::string refusal = SandboxRefusal(runtime);
  // One short line (terminals that relay stderr, the Inspector's, show it
  // whole): which layers hold and which do not, by name. Each layer's detail
  // and fix, and the mounts, are doctor's, and the debug level's.
  std::vector<std::string> active, inactive;
  size_t mounts = 0;
  try {
    for (const auto& layer : runtime.sandbox.value("layers", nlohmann::json::array())) {
      (layer.value("active", false) ? active : inactive).push_back(layer.value("name", ""));
    }
    mounts = runtime.sandbox.value("mounts", nlohmann::json::array()).size();
  } catch (const nlohmann::json::exception& e) {
    log::Warn("sandbox_report", {{"why", std::string("the zygote's report: ") + e.what()}});
  }
  log::Write(refusal.empty() ? log::Level::kInfo : log::Level::kError, "sandbox",
             {{"namespaces", runtime.sandbox.value("namespaces", "")},
              {"active", active},
              {"inactive", inactive},
              {"mounts", mounts},
              {"refusal", refusal},
              {"details", "mcp-exec doctor"}});
  log::Debug("sandbox_layers",
             {{"layers", runtime.sandbox.value("layers", nlohmann::json::array())},
              {"mounts", runtime.sandbox.value("mounts", nlohmann::json::array())}});
  WarnAboutConfig(config, runtime);
  log::Info("start",
            {{"version", MCP_EXEC_VERSION},
             {"transport", TransportName(config.transport)},
             {"max_concurrent", config.max_concurrent},
             {"max_queue", config.max_queue},
             {"default_timeout_s", config.default_timeout_s},
             {"max_timeout_s", config.max_timeout_s},
             {"memory_limit_mb", config.memory_limit_mb},
             {"max_output_bytes", config.max_output_bytes},
             {"max_stdin_bytes", config.max_stdin_bytes},
             {"limits", LimitsJson(config)},
             // stdio has no auth: its one caller started the server.
             {"auth", config.transport != Transport::kStdio && !config.auth_token.empty()}});
  if (config.transport == Transport::kStdio && !config.auth_token.empty()) {
    log::Warn("auth_token_ignored",
              {{"why",
                "MCP_EXEC_AUTH_TOKEN is set but stdio has no auth: the client that started "
                "the server is its only caller; the token guards http and sse"}});
  }
}

// Code mode: a stdio upstream is a process of the server's uid, holding its
// secrets in its environment. Where runs could read such a process
// (RunsReachServerProcesses: Docker's default seccomp profile on a kernel
// without Landlock), a start with one is refused, naming it. Returns ""
// when the upstreams are out of the runs' reach.
std::string StdioUpstreamRefusal(const RuntimeReport& runtime,
                                 const std::vector<upstream::Spec>& specs) {
  if (!RunsReachServerProcesses(runtime)) return "";
  for (const upstream::Spec& spec : specs) {
    if (!spec.stdio()) continue;
    return "upstream '" + spec.name + "' (a stdio upstream) would run as uid " +
           std::to_string(getuid()) +
           ", the runs' own, where runs share the server's pid namespace and Landlock is "
           "unavailable: a run could read its /proc/<pid>/environ (the upstream's env secrets) "
           "and open its pipes. Give it a \"url\" (an upstream over streamable HTTP that "
           "mcp-exec does not start), or run mcp-exec where runs get a pid namespace (user "
           "namespaces allowed, e.g. podman's or a custom seccomp profile) or Landlock (Linux "
           ">= 5.13 with landlock in the lsm= boot parameter); `mcp-exec doctor` shows both";
  }
  return "";
}

// The request path on a warm zygote, in the order its parts are built (and
// the reverse of the order they go).
struct RequestPath {
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Executor> executor;
  std::shared_ptr<upstream::Upstreams> upstreams;
  std::unique_ptr<SessionPool> sessions;
  std::unique_ptr<ExecBackend> backend;
};

constexpr const char* kStopping = "the server is stopping";

// Waits for the zygote's warm-up, then builds the request path on it. ""
// when it is up; kStopping when stopping() said the server stopped serving
// meanwhile (nothing more is built); else why not (said on stderr).
std::string BuildRequestPath(const Config& config, ZygoteClient& zygote, Metrics& metrics,
                             CallPool& pool, Server& server, std::vector<upstream::Spec> specs,
                             const std::function<bool()>& stopping, RequestPath* path) {
  auto fail = [](const std::string& why) {
    fprintf(stderr, "mcp-exec: %s\n", why.c_str());
    return why;
  };
  std::string error;
  if (!zygote.FinishStart(&error)) return stopping() ? kStopping : fail(error);
  if (stopping()) return kStopping;
  path->scheduler = std::make_unique<Scheduler>(config.max_concurrent, config.max_queue);
  path->executor = std::make_unique<Executor>(config, zygote, *path->scheduler, &metrics);
  if (!path->executor->Init(!zygote.private_mounts(), &error)) return fail(error);
  RuntimeReport runtime = zygote.report();
  LogStart(config, runtime);
  // Code mode: every upstream started and listed before the first call, or
  // no start at all (a missing tool would surface mid-run otherwise).
  if (!config.upstreams.empty()) {
    if (std::string why = StdioUpstreamRefusal(runtime, specs); !why.empty()) {
      log::Error("upstreams", {{"error", why}});
      return fail("MCP_EXEC_UPSTREAMS: " + why);
    }
    path->upstreams = std::make_shared<upstream::Upstreams>(std::move(specs), &metrics);
    if (!path->upstreams->Start(std::chrono::seconds(60), &error)) {
      log::Error("upstreams", {{"error", error}});
      return fail("MCP_EXEC_UPSTREAMS: " + error);
    }
    path->executor->SetToolGateway(path->upstreams, pool);
  }
  path->sessions = std::make_unique<SessionPool>(config, *path->executor, &metrics);
  path->backend = std::make_unique<ExecBackend>(config, zygote, *path->scheduler, *path->executor,
                                                *path->sessions, metrics, SandboxSummary(runtime),
                                                server.tasks());
  if (path->upstreams) {
    path->backend->SetToolsSummary(
        ToolsDescription(config, path->upstreams->Summary(config.describe_tools_max)));
  }
  // What the runs leave in the resource store: big task results wait there,
  // and resources/read serves it.
  server.tasks().SetSpill(TaskSpillTo(path->executor->resources()));
  server.SetResources(std::make_shared<StoreReader>(path->executor->resources()));
  return "";
}

// Once no transport serves: every run still going is ended, in the order
// what each needs goes.
void EndRuns(Server& server, RequestPath& path) {
  // Runs that became tasks are ended (their results say "shutdown") and
  // waited for: no connection waits for them any more. Then nothing reads
  // the resource store, which goes with the executor.
  server.tasks().Shutdown(std::chrono::seconds(30));
  server.tasks().SetSpill(nullptr);
  server.SetResources(nullptr);
  if (path.sessions) path.sessions->Shutdown();  // before the executor's cleaner stops
  if (path.executor) path.executor->Shutdown();
  // Nested calls still in flight end now (their channels' threads point at
  // the metrics and the upstreams, which go when Serve returns).
  if (path.upstreams) path.upstreams->Abort();
}

// Serves until told to stop. The transport answers at once (the handshake,
// server/discover, ping: WarmUpGate) while another thread waits for the
// zygote's warm-up and builds the request path; calls and tools/list wait
// for it. A start that fails stops the server (exit 1), as before serving.
// specs: the upstreams, read (and checked) before the warm-up.
int Serve(const Config& config, ZygoteClient& zygote, int signal_fd,
          std::vector<upstream::Spec> specs) {
  Metrics metrics;
  WarmUpGate gate(config, metrics);
  // What every session shares: the tool (the gate until the request path is
  // up), the tasks (from the start: a call made during the warm-up may
  // become one) and, once the path is up, the resources.
  Server server(gate, TaskOptionsFor(config));
  RequestPath path;
  // Every thread a call, a task or a tool channel runs on: joined below,
  // before what they point at goes.
  CallPool pool;
  std::atomic<bool> serving{true};
  std::atomic<bool> start_failed{false};
  // The starter may spawn a zygote itself (a retry with fewer namespaces
  // when the host refuses those of the first), and a zygote dies with the
  // thread that spawned it (PR_SET_PDEATHSIG): then the starter, its work
  // done, waits until the zygote is shut down. Otherwise it ends at once:
  // where runs keep the server's uid (the container postures) every thread
  // of the server counts against their process limit.
  std::mutex mu;
  std::condition_variable cv;
  bool built = false, released = false;
  std::thread starter([&] {
    std::string why = BuildRequestPath(
        config, zygote, metrics, pool, server, std::move(specs), [&] { return !serving.load(); },
        &path);
    if (why.empty()) {
      gate.Open(*path.backend, *path.backend);
    } else if (why != kStopping) {
      gate.Fail("the server could not start: " + why);
      start_failed = true;
      log::Error("start_failed", {{"why", why}, {"exit_status", 1}});
      // The transport stops as on a termination signal (signals are blocked
      // in every thread and read from signal_fd: one sent to the process).
      if (serving.load()) kill(getpid(), SIGTERM);
    }
    const bool keeps_zygote = zygote.SpawnedOnThisThread();
    std::unique_lock<std::mutex> lock(mu);
    built = true;
    cv.notify_all();
    if (keeps_zygote) cv.wait(lock, [&] { return released; });
  });
  int rc = config.transport == Transport::kStdio
               ? ServeStdio(server, config, STDIN_FILENO, STDOUT_FILENO, signal_fd, &pool)
               : ServeHttp(server, gate, config, signal_fd, &pool);
  serving = false;
  // A client that leaves during the warm-up (a 2026 client's server/discover
  // probe on a sibling server, say) is not kept waiting for it.
  zygote.AbortStart();
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return built; });  // at most the upstreams' own bound
  }
  gate.Fail(kStopping);
  if (start_failed) rc = 1;
  EndRuns(server, path);
  // What is left on the pool was ended above (tasks' runs, tool channels):
  // it ends within its own bounds. Said if it takes long; never cut short.
  if (!pool.WaitIdle(std::chrono::seconds(10))) {
    log::Warn("threads_outlive_shutdown",
              {{"running", pool.running()}, {"why", "still going 10 s after shutdown began"}});
  }
  pool.Join();
  zygote.Shutdown();  // then the starter may end
  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  cv.notify_all();
  starter.join();
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "__zygote") == 0) return ZygoteMain(argc, argv);

  std::vector<std::string> args(argv + 1, argv + argc);
  ParseResult parsed = ParseConfig(EnvironmentMap(environ), args);
  if (!parsed.error.empty()) {
    fprintf(stderr, "mcp-exec: %s\n", parsed.error.c_str());
    return 1;
  }
  if (!parsed.print_and_exit.empty()) {
    fputs(parsed.print_and_exit.c_str(), stdout);
    return 0;
  }
  const Config config = *parsed.config;
  // doctor prints its own report: the start's info lines (zygote_ready, a
  // JSON line) would only interleave with it. Warnings and errors still show.
  log::SetLevel(parsed.command == "doctor" && config.log_level == "info" ? "warn"
                                                                         : config.log_level);
  // Same-uid processes (runs, in the container posture) may not read our
  // memory, environment or fds through /proc.
  if (prctl(PR_SET_DUMPABLE, 0) != 0) {
    fprintf(stderr, "mcp-exec: prctl(PR_SET_DUMPABLE, 0): %s\n", strerror(errno));
    return 1;
  }
  // Code mode over HTTP beyond loopback needs a token: stopped before the
  // warm-up, saying how to go on (without upstreams, the Go server's
  // default stands, with a warning when listening).
  if (config.transport != Transport::kStdio && !config.upstreams.empty()) {
    if (std::string why = http_policy::UpstreamsExposure(config.addr, !config.auth_token.empty());
        !why.empty()) {
      fprintf(stderr, "mcp-exec: %s\n", why.c_str());
      log::Error("upstreams_exposed", {{"addr", config.addr}});
      if (parsed.command != "doctor") return 1;
    }
  }
  if (parsed.command == "doctor") return RunDoctor(config, parsed.json_output);

  // The upstreams file is read before the warm-up: a mistake in it (with
  // its line and column) is said at once.
  std::vector<upstream::Spec> specs;
  if (!config.upstreams.empty()) {
    std::string error;
    if (!upstream::LoadSpecs(config.upstreams, &specs, &error)) {
      fprintf(stderr, "mcp-exec: MCP_EXEC_UPSTREAMS: %s\n", error.c_str());
      return 1;
    }
  }
  int signal_fd = TerminationSignalFd();
  // Anything a dead zygote leaves behind is re-parented to us, to be killed.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  ZygoteClient zygote(config);
  std::string error;
  // Spawned before any thread exists; its warm-up is awaited beside the
  // transport (Serve).
  if (!zygote.Spawn(&error)) {
    fprintf(stderr, "mcp-exec: %s\n", error.c_str());
    return 1;
  }
  int rc = Serve(config, zygote, signal_fd, std::move(specs));  // shuts the zygote down
  log::Info("stopped", {{"exit_status", rc}});
  return rc;
}
