#include "tool/exec_backend.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "base/log.h"
#include "base/text.h"
#include "model/call_bounds.h"
#include "supervisor/doctor.h"
#include "supervisor/session_handles.h"

namespace mcpexec {

using json = nlohmann::json;

namespace {

// Reads [begin, end) of an open file; false on a short read.
bool ReadRange(int fd, int64_t begin, int64_t end, std::string* out) {
  out->assign(static_cast<size_t>(end - begin), '\0');
  size_t got = 0;
  while (got < out->size()) {
    ssize_t n = pread(fd, out->data() + got, out->size() - got,
                      static_cast<off_t>(begin + static_cast<int64_t>(got)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// A task's result kept in the resource store (its TTL is the task's).
class StoreSpill : public TaskResultSpill {
 public:
  explicit StoreSpill(ResourceStore* store) : store_(store) {}
  std::optional<std::string> Save(const std::string& bytes) override {
    auto w = store_->Begin(static_cast<int64_t>(bytes.size()));
    if (!w || !w->Write(bytes.data(), bytes.size())) return std::nullopt;
    return store_->Commit(*w, "task-result.json", "application/json");
  }
  std::optional<std::string> Load(const std::string& key) override {
    auto opened = store_->Open(key);
    if (!opened) return std::nullopt;
    std::string out;
    if (!ReadRange(opened->second.get(), 0, opened->first.size, &out)) return std::nullopt;
    return out;
  }

 private:
  ResourceStore* store_;
};

TaskOptions TaskOptionsFor(const Config& c, ResourceStore* store) {
  TaskOptions o;
  if (store) o.spill = std::make_shared<StoreSpill>(store);
  o.after = std::chrono::seconds(c.task_after_s);
  o.max_tasks = c.max_tasks;
  // A task's result lasts as long as the resources its links name.
  o.keep = std::chrono::seconds(c.resource_ttl_s);
  // The longest a run goes once it started: its timeout, then the kill.
  o.run_bound = CallBound(c);
  return o;
}

}  // namespace

ExecBackend::ExecBackend(const Config& config, ZygoteClient& zygote, Scheduler& scheduler,
                         Executor& executor, SessionPool& sessions, Metrics& metrics,
                         std::string sandbox_summary)
    : config_(config),
      zygote_(zygote),
      scheduler_(scheduler),
      executor_(executor),
      sessions_(sessions),
      metrics_(metrics),
      sandbox_summary_(std::move(sandbox_summary)),
      tasks_(TaskOptionsFor(config, executor.resources())) {}

bool ExecBackend::Ready() const {
  return zygote_.WaitReady(0) && SandboxRefusal(zygote_.report()).empty() &&
         scheduler_.running() + scheduler_.queued() <
             scheduler_.max_running() + scheduler_.max_queued();
}

std::string ExecBackend::MetricsText(int64_t sessions, int64_t streams) const {
  Metrics::Gauges g;
  g.in_flight = scheduler_.running();
  g.queued = scheduler_.waiting();
  g.zygote_restarts = zygote_.restarts();
  g.sessions = sessions;
  g.streams = streams;
  g.py_sessions = sessions_.live();
  g.tasks = static_cast<int64_t>(tasks_.size());
  return metrics_.Render(g);
}

json ExecBackend::ToolDescriptor() const {
  return {
      {"name", ExecToolName()},
      {"title", "Execute Python"},
      {"description",
       ExecDescription(config_, zygote_.report(), sandbox_summary_) + tools_summary_},
      {"inputSchema", ExecInputSchema()},
      {"outputSchema", ExecOutputSchema()},
      {"annotations",
       {{"readOnlyHint", false},
        {"destructiveHint", false},
        {"idempotentHint", false},
        {"openWorldHint", false}}},
  };
}

namespace {

// Where part k ends (k parts in): k x kResourcePartBytes, moved back to the
// start of a UTF-8 character (at most 3 bytes), so that a text resource's
// parts are text each; the last ends at the end.
int64_t PartEnd(int fd, int64_t k, int64_t size) {
  int64_t at = k * kResourcePartBytes;
  if (at >= size) return size;
  std::string probe;
  if (!ReadRange(fd, at - 3, at + 1, &probe)) return at;
  for (int back = 0; back < 3 && (static_cast<unsigned char>(probe[3 - back]) & 0xC0) == 0x80;
       ++back) {
    --at;
  }
  return at;
}

}  // namespace

// `uri`, or `uri?part=N` (1-based) for a resource read in parts: each read
// carries at most kResourcePartBytes of it, and its _meta says which part
// it is, of how many, and the next one's URI.
std::optional<ToolBackend::Resource> ExecBackend::ReadResource(const std::string& uri) {
  ResourceStore* store = executor_.resources();
  if (!store) return std::nullopt;
  std::string base = uri;
  int64_t part = 1;
  if (const size_t q = uri.rfind("?part="); q != std::string::npos) {
    base = uri.substr(0, q);
    if (!ParseDecimal(uri.substr(q + 6), &part) || part < 1) return std::nullopt;
  }
  auto found = store->Open(base);
  const int64_t parts = found ? ResourceParts(found->first.size) : 0;
  if (!found || part > parts) {
    log::Info("resource_read", {{"found", false}});
    return std::nullopt;
  }
  auto& [entry, fd] = *found;
  // Read from the open file: an eviction meanwhile unlinks only its name.
  const int64_t begin = part == 1 ? 0 : PartEnd(fd.get(), part - 1, entry.size);
  const int64_t end = PartEnd(fd.get(), part, entry.size);
  std::string data;
  if (!ReadRange(fd.get(), begin, end, &data)) return std::nullopt;
  const std::string mime = entry.mime.empty() ? MimeTypeForPath(entry.name) : entry.mime;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      entry.expires - ResourceStore::Clock::now());
  log::Info("resource_read", {{"found", true}, {"bytes", end - begin}, {"part", part}});
  Resource r{json::array({ResourceContentsItem(uri, mime, data)}),
             std::max<int64_t>(0, left.count()), json::object()};
  if (parts > 1) {
    r.meta = {{"mcp-exec/part", part}, {"mcp-exec/parts", parts}, {"mcp-exec/size", entry.size}};
    if (part < parts) r.meta["mcp-exec/next"] = ResourcePartUri(base, part + 1);
  }
  return r;
}

std::variant<ToolBackend::Work, json> ExecBackend::Accept(const json& arguments,
                                                          const CallContext& context) {
  auto validated = ValidateExecArguments(arguments, config_);
  if (auto* err = std::get_if<std::string>(&validated)) return ToolError(*err);
  if (!scheduler_.Admit()) {
    metrics_.RecordFailure(RunFailureName(RunFailure::kAtCapacity));
    log::Warn("at_capacity", {});
    return ToolError("the server is at capacity: " + std::to_string(scheduler_.max_running()) +
                     " runs executing and " + std::to_string(scheduler_.max_queued()) +
                     " queued (MCP_EXEC_MAX_CONCURRENT, MCP_EXEC_MAX_QUEUE); try again shortly");
  }
  ExecRequest req = std::get<ExecRequest>(std::move(validated));
  // A session call takes its place in the session's line now, so calls to
  // one session run in the order they arrived.
  std::shared_ptr<SessionPool::Ticket> ticket;
  if (!req.session.empty()) {
    SessionPool::Reservation r = sessions_.Reserve(
        {context.connection, context.stateless, req.session, context.peer + " " + context.client});
    if (!r.ticket) {
      executor_.Withdraw();
      if (r.full) {
        metrics_.RecordFailure(RunFailureName(RunFailure::kPySessionsFull));
        log::Warn("py_sessions_full", {{"max_py_sessions", config_.max_py_sessions}});
      }
      return ToolError(r.error);
    }
    ticket = std::move(r.ticket);
  }
  return Work([this, req = std::move(req), ticket = std::move(ticket)](CancelToken& cancel,
                                                                       const Progress& progress) {
    return Execute(req, cancel, progress, ticket.get());
  });
}

json ExecBackend::Execute(const ExecRequest& req, CancelToken& cancel, const Progress& progress,
                          SessionPool::Ticket* ticket) {
  // Fail closed: without its required layers the sandbox runs nothing.
  std::string refusal = SandboxRefusal(zygote_.report());
  if (!refusal.empty()) {
    executor_.Withdraw();
    metrics_.RecordFailure(RunFailureName(RunFailure::kLayersMissing));
    log::Warn("layers_missing", {{"why", refusal}});
    return ToolError("this server refuses to run code: " + refusal +
                     ". Run `mcp-exec doctor` for details.");
  }
  if (!ticket) {
    auto outcome = executor_.Run(ToRunRequest(req), cancel, progress);
    if (auto* err = std::get_if<std::string>(&outcome)) return ToolError(*err);
    ExecResult r = ToExecResult(std::get<RunOutcome>(std::move(outcome)));
    r.output_cap = config_.max_output_bytes;
    r.text_output_bytes = config_.text_output_bytes;
    r.timeout_note = req.timeout_note;
    return ToolResult(r);
  }
  SessionPool::CellOutcome cell =
      sessions_.Run(*ticket, req.reset, req.end, ToRunRequest(req), cancel, progress);
  const std::string& name = SessionPool::NameOf(*ticket);  // the handle "new" minted
  if (auto* err = std::get_if<std::string>(&cell.result)) {
    std::string message = "session \"" + name + "\": " + *err;
    if (!cell.ended.empty()) {
      message += " (the session ended: " + cell.ended +
                 (HandleBook::LooksLikeHandle(name) ? ")" : "; the next call starts a new one)");
    }
    return ToolError(message);
  }
  ExecResult r = ToExecResult(std::get<RunOutcome>(std::move(cell.result)));
  r.output_cap = config_.max_output_bytes;
  r.text_output_bytes = config_.text_output_bytes;
  r.timeout_note = req.timeout_note;
  r.session = name;
  r.session_new = cell.is_new;
  r.session_ended = cell.ended;
  r.session_restarted = cell.restarted;
  return ToolResult(r);
}

RunRequest ToRunRequest(const ExecRequest& req) {
  return RunRequest{req.code, req.stdin_data, req.timeout_s, req.files};
}

ExecResult ToExecResult(RunOutcome o) {
  ExecResult r;
  static_cast<RunOutcome&>(r) = std::move(o);
  r.timed_out = r.end == RunEnd::kTimeout;
  r.reason = RunEndName(r.end);
  return r;
}

}  // namespace mcpexec
