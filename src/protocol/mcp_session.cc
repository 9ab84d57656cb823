#include "protocol/mcp_session.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <thread>

#include "base/bounded_json.h"
#include "base/cancel.h"
#include "base/log.h"
#include "protocol/stateless.h"
#include "protocol/tasks.h"

namespace mcpexec {

using json = nlohmann::json;

std::optional<json> ProgressTokenOf(const json& params) {
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return std::nullopt;
  auto token = meta->find("progressToken");
  if (token == meta->end() || !(token->is_string() || token->is_number_integer())) {
    return std::nullopt;
  }
  return *token;
}

json ToolErrorResult(const std::string& message) {
  return {
      {"content", json::array({{{"type", "text"}, {"text", message}}})},
      {"isError", true},
  };
}

namespace {
std::atomic<uint64_t> g_next_connection{1};

// The pool of sessions made without the server's (unit tests, the fuzz
// targets): one for the process, never destroyed, so that a task's run
// outlives its session there as it does in the server, whose pool main
// joins at shutdown.
CallPool& FallbackPool() {
  static CallPool* pool = new CallPool();
  return *pool;
}
}  // namespace

McpSession::McpSession(ToolBackend& backend, Sender send, Options options)
    : own_server_(std::make_unique<Server>(backend)),
      server_(*own_server_),
      backend_(backend),
      options_(options),
      pool_(options.pool ? *options.pool : FallbackPool()),
      connection_(g_next_connection++),
      send_(std::move(send)) {}

McpSession::McpSession(Server& server, Sender send, Options options)
    : server_(server),
      backend_(server.tool()),
      options_(options),
      pool_(options.pool ? *options.pool : FallbackPool()),
      connection_(g_next_connection++),
      send_(std::move(send)) {}

McpSession::~McpSession() {
  // Call threads hold `this`: none may outlive it. Cancelled runs end within
  // the executor's own bounds (kill grace, pipe grace, a queue that wakes on
  // cancel), so this wait ends; it is not cut short by a timeout.
  CancelAll();
  while (!WaitIdle(std::chrono::seconds(30))) {
    log::Warn("session_waits_for_calls", {{"in_flight", in_flight()}});
  }
  backend_.ConnectionEnded(connection_);
}

std::string McpSession::protocol_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return protocol_version_;
}

int64_t McpSession::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

void McpSession::HandleText(const std::string& text) {
  bounded_json::Parsed parsed = bounded_json::Parse(text);
  if (!parsed.ok()) {
    // Too deep: refused before a value is built, answered with the id when
    // the top level has one (JSON-RPC's invalid request); not JSON at all:
    // a parse error, id null.
    if (parsed.too_deep) {
      send_(jsonrpc::Error(bounded_json::TopLevelId(text), jsonrpc::kInvalidRequest, parsed.error));
    } else {
      send_(jsonrpc::Error(nullptr, jsonrpc::kParseError, parsed.error));
    }
    log::Warn("message_refused",
              {{"why", parsed.too_deep ? "too deep" : "not JSON"}, {"bytes", text.size()}});
    return;
  }
  Handle(parsed.value);
}

void McpSession::Handle(const json& msg) {
  jsonrpc::Inbound in = jsonrpc::Classify(msg);
  const Era era = options_.stateless ? eras::Classify(msg, nullptr) : Era::kLegacy;
  if (in.kind == jsonrpc::Inbound::Kind::kRequest && era == Era::kStateless) {
    // Protocol 2026-07-28: each request carries its version and
    // capabilities in _meta, checked first.
    if (auto refused = stateless::CheckRequest(in.id->ToJson(), in.method, in.params)) {
      return send_(refused->response);
    }
  }
  Deliver(std::move(in), era);
}

void McpSession::Deliver(jsonrpc::Inbound in, Era era) {
  using Kind = jsonrpc::Inbound::Kind;
  switch (in.kind) {
    case Kind::kRefused:
      return send_(in.refusal);
    case Kind::kResponse:  // we send no requests: nothing to do
    case Kind::kDropped:
      return;
    case Kind::kNotification:
      // notifications/initialized and anything unknown: nothing to answer.
      if (in.method == "notifications/cancelled") {
        const json rid = in.params.value("requestId", json(nullptr));
        if (auto id = jsonrpc::RequestId::From(rid)) Cancel(*id);
      }
      return;
    case Kind::kRequest:
      return Dispatch(Request{std::move(*in.id), std::move(in.method), std::move(in.params), era});
  }
}

const McpSession::Table& McpSession::TableOf(Era era) {
  // Resources are the links calls hand out: none is listed. The stateless
  // era has no handshake, and no ping.
  static const Table legacy = {
      {"initialize", {&McpSession::Initialize, true}},
      {"ping", {&McpSession::Ping, true}},
      {"tools/list", {&McpSession::ListTools, false}},
      {"tools/call", {&McpSession::CallTool, false}},
      {"resources/list", {&McpSession::ListResources, false}},
      {"resources/templates/list", {&McpSession::ListResourceTemplates, false}},
      {"resources/read", {&McpSession::ReadResource, false}},
      {"tasks/get", {&McpSession::TaskRequest, false}},
      {"tasks/cancel", {&McpSession::TaskRequest, false}},
      {"tasks/update", {&McpSession::TaskRequest, false}},
  };
  static const Table stateless = {
      {"server/discover", {&McpSession::Discover, true}},
      {"tools/list", {&McpSession::ListTools, true}},
      {"tools/call", {&McpSession::CallTool, true}},
      {"prompts/list", {&McpSession::ListPrompts, true}},
      {"prompts/get", {&McpSession::GetPrompt, true}},
      {"resources/list", {&McpSession::ListResources, true}},
      {"resources/read", {&McpSession::ReadResource, true}},
      {"resources/templates/list", {&McpSession::ListResourceTemplates, true}},
      {"subscriptions/listen", {&McpSession::Listen, true}},
      {"tasks/get", {&McpSession::TaskRequest, true}},
      {"tasks/cancel", {&McpSession::TaskRequest, true}},
      {"tasks/update", {&McpSession::TaskRequest, true}},
  };
  return era == Era::kStateless ? stateless : legacy;
}

std::vector<std::string> McpSession::MethodsOf(Era era) {
  std::vector<std::string> methods;
  for (const auto& [method, route] : TableOf(era)) methods.push_back(method);
  return methods;
}

void McpSession::Dispatch(const Request& req) {
  const Table& table = TableOf(req.era);
  auto route = table.find(req.method);
  if (route == table.end() || !route->second.before_initialize) {
    if (req.era == Era::kLegacy && !initialized_) {
      return send_(jsonrpc::Error(req.id, jsonrpc::kInvalidRequest,
                                  "the session is not initialized: send initialize first"));
    }
  }
  if (route == table.end()) {
    // (A stateless request names a served method: checked on entry.)
    return send_(
        jsonrpc::Error(req.id, jsonrpc::kMethodNotFound, "method not found: " + req.method));
  }
  (this->*route->second.handler)(req);
}

void McpSession::Initialize(const Request& req) {
  const json& params = req.params;
  std::string requested = params.value("protocolVersion", json("")).is_string()
                              ? params.value("protocolVersion", std::string())
                              : std::string();
  std::string version = eras::NegotiateLegacyVersion(requested);
  json client = params.value("clientInfo", json::object());
  {
    std::lock_guard<std::mutex> lock(mu_);
    protocol_version_ = version;
    client_ = client.is_object() && client.contains("name") && client["name"].is_string()
                  ? client["name"].get<std::string>()
                  : std::string();
  }
  initialized_ = true;
  log::Info("initialize",
            {{"protocol_version", version},
             {"client", client.is_object() ? client.value("name", json("")) : json("")}});
  json result = {{"protocolVersion", version},
                 {"capabilities",
                  {{"tools", {{"listChanged", false}}},
                   {"resources", {{"listChanged", false}, {"subscribe", false}}}}},
                 {"serverInfo", stateless::ServerInfo()}};
  if (json ext = Extensions(); !ext.empty()) result["capabilities"]["extensions"] = ext;
  std::string instructions = backend_.Instructions();
  if (!instructions.empty()) result["instructions"] = std::move(instructions);
  send_(jsonrpc::Result(req.id, std::move(result)));
}

void McpSession::Ping(const Request& req) { send_(jsonrpc::Result(req.id, json::object())); }

// A result of protocol 2026-07-28 says it is complete, names the server,
// and says how long it may be cached and by whom.
void McpSession::AnswerList(const Request& req, json result) {
  if (req.stateless()) {
    result = stateless::Complete(
        stateless::WithCacheHints(std::move(result), kCacheTtlMs, backend_.CacheScope()));
  }
  send_(jsonrpc::Result(req.id, result));
}

void McpSession::Discover(const Request& req) {
  json result = {
      {"supportedVersions", eras::AllSupportedVersions()},
      {"capabilities",
       {{"tools", json::object()}, {"prompts", json::object()}, {"resources", json::object()}}}};
  if (json ext = Extensions(); !ext.empty()) result["capabilities"]["extensions"] = ext;
  std::string instructions = backend_.Instructions();
  if (!instructions.empty()) result["instructions"] = std::move(instructions);
  AnswerList(req, std::move(result));
}

void McpSession::ListTools(const Request& req) {
  AnswerList(req, {{"tools", json::array({backend_.ToolDescriptor()})}});
}

// This server lists no resources (those it serves are the links its calls
// hand out) and has no prompts: empty lists, and an unknown name (-32602)
// for any prompt asked for.
void McpSession::ListResources(const Request& req) {
  AnswerList(req, {{"resources", json::array()}});
}

void McpSession::ListResourceTemplates(const Request& req) {
  AnswerList(req, {{"resourceTemplates", json::array()}});
}

void McpSession::ListPrompts(const Request& req) { AnswerList(req, {{"prompts", json::array()}}); }

void McpSession::GetPrompt(const Request& req) {
  send_(jsonrpc::Error(req.id, jsonrpc::kInvalidParams, "unknown prompt: this server has none"));
}

// Acknowledged at once with nothing subscribed (no list of this server
// changes); the request stays open until it is cancelled or the server ends.
void McpSession::Listen(const Request& req) {
  const json id = req.id.ToJson();
  json ack = {
      {"jsonrpc", "2.0"},
      {"method", "notifications/subscriptions/acknowledged"},
      {"params",
       {{"_meta", {{stateless::kMetaSubscriptionId, id}}}, {"notifications", json::object()}}}};
  {
    std::lock_guard<std::mutex> lock(mu_);
    listens_.insert(req.id);
  }
  if (!related_ || !related_(ack, req.id)) send_(ack);
}

void McpSession::EndListens() {
  std::set<jsonrpc::RequestId> open;
  {
    std::lock_guard<std::mutex> lock(mu_);
    open.swap(listens_);
  }
  for (const jsonrpc::RequestId& id : open) {
    send_(jsonrpc::Result(
        id, stateless::Complete({{"_meta", {{stateless::kMetaSubscriptionId, id.ToJson()}}}})));
  }
}

// The error for a URI that names nothing: -32002 in the 2025 era (its
// "resource not found"), -32602 in 2026-07-28 (which dropped that code).
void McpSession::ReadResource(const Request& req) {
  const json uri = req.params.value("uri", json(nullptr));
  if (!uri.is_string()) {
    return send_(jsonrpc::Error(req.id, jsonrpc::kInvalidParams, "params.uri must be a string"));
  }
  auto resource = server_.ReadResource(uri.get<std::string>());
  if (!resource) {
    json error = jsonrpc::Error(
        req.id, req.stateless() ? jsonrpc::kInvalidParams : jsonrpc::kResourceNotFound,
        "resource not found: " + uri.get<std::string>() +
            " (a resource lives until its TTL passes or the server restarts; run the code again "
            "to make it anew)");
    error["error"]["data"] = {{"uri", uri}};
    return send_(error);
  }
  json result = {{"contents", std::move(resource->contents)}};
  if (resource->meta.is_object() && !resource->meta.empty()) result["_meta"] = resource->meta;
  if (req.stateless()) {
    // Whoever holds the URI may read it: never shared beyond this client.
    result = stateless::Complete(
        stateless::WithCacheHints(std::move(result), resource->ttl_ms, "private"));
  }
  send_(jsonrpc::Result(req.id, result));
}

void McpSession::Cancel(const jsonrpc::RequestId& id) {
  std::vector<std::shared_ptr<CancelToken>> tokens;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [first, last] = calls_.equal_range(id);
    for (auto it = first; it != last; ++it) tokens.push_back(it->second);
    listens_.erase(id);  // a listen ends without an answer
  }
  if (!tokens.empty()) log::Info("cancel", {{"request_id", id.ToJson()}});
  for (auto& token : tokens) token->Cancel();
}

void McpSession::CallTool(const Request& req) {
  const json& params = req.params;
  const bool stateless_era = req.stateless();
  // A result of protocol 2026-07-28 says it is complete and names the server.
  auto result_of = [stateless_era](json r) {
    return stateless_era ? stateless::Complete(std::move(r)) : std::move(r);
  };
  json name = params.value("name", json(nullptr));
  const std::string tool = backend_.ToolName();
  if (!name.is_string() || name.get<std::string>() != tool) {
    send_(jsonrpc::Error(
        req.id, jsonrpc::kInvalidParams,
        "unknown tool: " + (name.is_string() ? name.get<std::string>() : name.dump()) +
            " (this server has one tool, " + tool + ")"));
    return;
  }
  // The token comes back in every progress notification, once a second: a
  // bound, so that a client cannot make the server repeat megabytes.
  const json meta = params.value("_meta", json::object());
  if (meta.is_object() && meta.contains("progressToken") && meta["progressToken"].is_string() &&
      meta["progressToken"].get_ref<const std::string&>().size() > kMaxProgressTokenBytes) {
    send_(jsonrpc::Error(
        req.id, jsonrpc::kInvalidParams,
        "_meta.progressToken is " +
            std::to_string(meta["progressToken"].get_ref<const std::string&>().size()) +
            " bytes long; at most " + std::to_string(kMaxProgressTokenBytes)));
    return;
  }
  json args = params.value("arguments", json::object());
  if (args.is_null()) args = json::object();
  if (!args.is_object()) {
    send_(jsonrpc::Result(req.id, result_of(ToolErrorResult("arguments must be an object"))));
    return;
  }
  CallContext context{connection_, stateless_era, std::string(), options_.peer};
  if (stateless_era) {
    const json info = meta.is_object() ? meta.value(stateless::kMetaClientInfo, json()) : json();
    if (info.is_object() && info.contains("name") && info["name"].is_string()) {
      context.client = info["name"];
    }
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    context.client = client_;
  }
  auto accepted = backend_.Accept(args, context);
  if (auto* refusal = std::get_if<json>(&accepted)) {
    send_(jsonrpc::Result(req.id, result_of(*refusal)));
    return;
  }
  auto token = std::make_shared<CancelToken>();
  const jsonrpc::RequestId id = req.id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.emplace(id, token);
    ++in_flight_;
  }
  ToolBackend::Progress progress = MakeProgress(req, token);
  auto work = std::get<ToolBackend::Work>(std::move(accepted));
  if (DeclaresTasks(params) && server_.TasksEnabled()) {
    return StartTaskableCall(id, token, progress, stateless_era, std::move(work));
  }
  const bool started =
      pool_.Start([this, id, token, progress, stateless_era, work = std::move(work)] {
        json result = work(*token, progress);
        AnswerCall(id, token, stateless_era ? stateless::Complete(std::move(result)) : result);
      });
  if (!started) AnswerCall(id, token, NoThreadResult(stateless_era));
}

json McpSession::NoThreadResult(bool stateless_era) {
  log::Error("call_not_started", {{"why", "no thread"}});
  json result = ToolErrorResult(
      "the server could not start a thread for this call (its process limit is reached: too "
      "many calls or runs at once); the code did not run. Try again when fewer calls are "
      "running.");
  return stateless_era ? stateless::Complete(std::move(result)) : result;
}

void McpSession::AnswerCall(const jsonrpc::RequestId& id, const std::shared_ptr<CancelToken>& token,
                            const json& result) {
  // A cancelled request gets no response (MCP cancellation); one ended by
  // the server's shutdown is answered.
  if (!token->cancelled() || token->reason() == CancelReason::kShutdown) {
    send_(jsonrpc::Result(id, result));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ForgetCallLocked(id, token);
  CallEndedLocked();
}

void McpSession::CallEndedLocked() {
  --in_flight_;
  idle_cv_.notify_all();
  if (in_flight_ == 0 && idle_fd_) {
    uint64_t one = 1;
    (void)!write(idle_fd_.get(), &one, sizeof one);
  }
  server_.changes().Notify();
}

int McpSession::IdleFd() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!idle_fd_) idle_fd_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  return idle_fd_.get();
}

void McpSession::ForgetCallLocked(const jsonrpc::RequestId& id,
                                  const std::shared_ptr<CancelToken>& token) {
  auto [first, last] = calls_.equal_range(id);
  for (auto it = first; it != last; ++it) {
    if (it->second == token) {
      calls_.erase(it);
      break;
    }
  }
}

namespace {

// A call of a client that declared tasks, between its work's thread and the
// call's: its result once the work is done, and its task once it has one.
// (clang-tidy cannot see that nlohmann::json's implicit moves do not throw.)
struct TaskableCall {  // NOLINT(bugprone-exception-escape)
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  json result;
  std::string task;  // set when the call became a task
};

std::string TaskProgressMessage(double seconds, const std::string& newest) {
  return "running for " + std::to_string(static_cast<int64_t>(seconds)) +
         " s; newest output: " + newest;
}

}  // namespace

// The work's thread never touches the session: before the hand-off its
// progress goes through `progress` (the call's thread, which the session
// waits for, is still there), after it everything goes to the store, which
// outlives every session.
void McpSession::StartTaskableCall(const jsonrpc::RequestId& id,
                                   const std::shared_ptr<CancelToken>& token,
                                   const ToolBackend::Progress& progress, bool stateless_era,
                                   ToolBackend::Work work) {
  TaskStore& store = server_.tasks();
  auto call = std::make_shared<TaskableCall>();
  ToolBackend::Progress routed = [call, progress, &store](double seconds, const std::string& m) {
    std::lock_guard<std::mutex> lock(call->mu);
    if (!call->task.empty()) return store.Progress(call->task, TaskProgressMessage(seconds, m));
    if (progress) progress(seconds, m);
  };
  // The call's job starts the work's job: each can answer for the other
  // when no thread can be made for it.
  auto run = [call, token, routed, stateless_era, &store, work = std::move(work)]() mutable {
    json result = work(*token, routed);
    if (stateless_era) result = stateless::Complete(std::move(result));
    work = nullptr;  // what it holds (a session's place in line) goes before the task ends
    std::unique_lock<std::mutex> lock(call->mu);
    call->done = true;
    if (call->task.empty()) {
      call->result = std::move(result);
      call->cv.notify_all();
      return;
    }
    const std::string task = call->task;
    lock.unlock();
    store.Finish(task, std::move(result));
  };
  const bool started =
      pool_.Start([this, id, token, call, stateless_era, &store, run = std::move(run)]() mutable {
        if (!pool_.Start(std::move(run))) {
          return AnswerCall(id, token, NoThreadResult(stateless_era));
        }
        std::unique_lock<std::mutex> lock(call->mu);
        if (!call->cv.wait_for(lock, store.options().after, [&] { return call->done; })) {
          // The task is made and the call leaves calls_ at once (under mu_, so
          // that no cancel of the call falls in between): from then on
          // notifications/cancelled and the session's end no longer reach it
          // (tasks/cancel does). A full store: answered in place, as without
          // the extension.
          std::string task;
          std::optional<json> created;
          {
            std::lock_guard<std::mutex> l(mu_);
            if (!token->cancelled()) created = store.Create(token, &task);
            if (created) ForgetCallLocked(id, token);
          }
          if (created) {
            call->task = task;
            lock.unlock();
            json result = stateless_era ? stateless::Complete(std::move(*created)) : *created;
            result["resultType"] = "task";
            send_(jsonrpc::Result(id, result));
            std::lock_guard<std::mutex> l(mu_);
            CallEndedLocked();
            return;
          }
        }
        call->cv.wait(lock, [&] { return call->done; });
        json result = std::move(call->result);
        lock.unlock();
        AnswerCall(id, token, result);
      });
  if (!started) AnswerCall(id, token, NoThreadResult(stateless_era));
}

// Per request, in both eras: the extension's server "MUST NOT return
// CreateTaskResult to a client that did not include the extension
// capability on its request, regardless of prior declarations" (so not on
// the strength of initialize's capabilities either).
bool McpSession::DeclaresTasks(const json& params) {
  const json meta = params.value("_meta", json::object());
  const json caps =
      meta.is_object() ? meta.value(stateless::kMetaClientCapabilities, json()) : json();
  const json ext = caps.is_object() ? caps.value("extensions", json()) : json();
  return ext.is_object() && ext.contains(kTasksExtension) && ext[kTasksExtension].is_object();
}

json McpSession::Extensions() const {
  json ext = json::object();
  if (server_.TasksEnabled()) ext[kTasksExtension] = json::object();
  return ext;
}

// The extension's methods. A client that did not declare it is refused
// (-32021); an id that names no task, never had or expired, is -32602.
void McpSession::TaskRequest(const Request& req) {
  const jsonrpc::RequestId& id = req.id;
  const std::string& method = req.method;
  const json& params = req.params;
  const bool stateless_era = req.stateless();
  if (!DeclaresTasks(params)) {
    json error = jsonrpc::Error(id, stateless::kMissingRequiredClientCapability,
                                std::string("Missing required client capability: ") + method +
                                    " is of the extension " + kTasksExtension +
                                    "; declare it in the request's _meta " +
                                    stateless::kMetaClientCapabilities + ".extensions");
    error["error"]["data"] = {
        {"requiredCapabilities", {{"extensions", {{kTasksExtension, json::object()}}}}}};
    return send_(error);
  }
  const json task_id = params.value("taskId", json());
  if (!task_id.is_string()) {
    return send_(jsonrpc::Error(id, jsonrpc::kInvalidParams, "params.taskId must be a string"));
  }
  const std::string& tid = task_id.get_ref<const std::string&>();
  auto complete = [stateless_era](json r) {
    if (stateless_era) r = stateless::Complete(std::move(r));
    r["resultType"] = "complete";
    return r;
  };
  TaskStore& store = server_.tasks();
  std::optional<json> found;
  if (method == "tasks/get") {
    found = store.Get(tid);
  } else if (method == "tasks/cancel") {
    const TaskStore::Cancelled c = store.Cancel(tid);
    if (c.outcome == TaskStore::CancelOutcome::kEnded) {
      json error = jsonrpc::Error(id, jsonrpc::kInvalidParams,
                                  "Cannot cancel task: it already ended (status " + c.status +
                                      "); tasks/get gives its result");
      error["error"]["data"] = {{"taskId", task_id}, {"status", c.status}};
      return send_(error);
    }
    if (c.outcome != TaskStore::CancelOutcome::kNoSuchTask) found = json::object();
  } else if (store.Known(tid)) {
    found = json::object();  // tasks/update: this server never asks for input
  }
  if (!found) {
    json error = jsonrpc::Error(
        id, jsonrpc::kInvalidParams,
        "Failed to retrieve task: no such task (it never was, or it expired: a task is kept " +
            std::to_string(store.options().keep.count() / 1000) +
            " s after its run ends, MCP_EXEC_RESOURCE_TTL_S, and none outlives the server)");
    error["error"]["data"] = {{"taskId", task_id}};
    return send_(error);
  }
  send_(jsonrpc::Result(id, complete(std::move(*found))));
}

ToolBackend::Progress McpSession::MakeProgress(const Request& req,
                                               const std::shared_ptr<CancelToken>& token) {
  const jsonrpc::RequestId id = req.id;
  std::optional<json> token_of = ProgressTokenOf(req.params);
  if (!token_of) return nullptr;
  const json progress_token = std::move(*token_of);
  // Only while the call runs and is wanted: never after its answer (the
  // call thread sends both, in that order) nor once it is cancelled.
  return [this, id, progress_token, token](double progress, const std::string& message) {
    if (token->cancelled()) return;
    json note = {
        {"jsonrpc", "2.0"},
        {"method", "notifications/progress"},
        {"params",
         {{"progressToken", progress_token}, {"progress", progress}, {"message", message}}}};
    if (!related_ || !related_(note, id)) send_(note);
  };
}

void McpSession::CancelAll(CancelReason why) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, token] : calls_) token->Cancel(why);
}

bool McpSession::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return in_flight_ == 0; });
}

}  // namespace mcpexec
