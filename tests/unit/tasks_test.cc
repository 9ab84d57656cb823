#include "protocol/tasks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "protocol/mcp_session.h"
#include "protocol/stateless.h"

namespace mcpexec {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

TaskOptions Quick() {
  TaskOptions o;
  o.after = milliseconds(50);
  o.max_tasks = 4;
  o.keep = milliseconds(60000);
  o.run_bound = milliseconds(1000);
  return o;
}

TEST(TaskStoreTest, ATaskIsWorkingThenCompletedWithItsResult) {
  TaskStore store(Quick());
  auto token = std::make_shared<CancelToken>();
  std::string id;
  auto created = store.Create(token, &id);
  ASSERT_TRUE(created);
  EXPECT_EQ((*created)["resultType"], "task");
  EXPECT_EQ((*created)["taskId"], id);
  EXPECT_EQ((*created)["status"], "working");
  EXPECT_EQ((*created)["pollIntervalMs"], 1000);
  EXPECT_GE((*created)["ttlMs"].get<int64_t>(), 61000);  // the run's bound, then keep
  EXPECT_FALSE(created->contains("result"));
  store.Progress(id, "running for 3 s; newest output: x");
  auto working = store.Get(id);
  ASSERT_TRUE(working);
  EXPECT_EQ((*working)["status"], "working");
  EXPECT_EQ((*working)["statusMessage"], "running for 3 s; newest output: x");
  EXPECT_FALSE(working->contains("resultType"));  // the caller's: "complete" for tasks/get
  store.Finish(id, {{"content", json::array()}, {"isError", false}});
  auto done = store.Get(id);
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["status"], "completed");
  EXPECT_EQ((*done)["result"], json({{"content", json::array()}, {"isError", false}}));
  EXPECT_LT((*done)["ttlMs"].get<int64_t>(), 61000);  // now exactly keep after the end
  EXPECT_GE((*done)["ttlMs"].get<int64_t>(), 60000);
  EXPECT_FALSE(token->cancelled());
}

TEST(TaskStoreTest, CancelEndsTheRunAndKeepsItsOutput) {
  TaskStore store(Quick());
  auto token = std::make_shared<CancelToken>();
  std::string id;
  ASSERT_TRUE(store.Create(token, &id));
  // The run ends a moment after its kill (here: once the token is cancelled):
  // the cancel's answer waits for that, so the status has changed by then.
  std::thread run([&] {
    while (!token->cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    store.Finish(id, {{"content", json::array({{{"type", "text"}, {"text", "so far"}}})}});
  });
  const TaskStore::Cancelled c = store.Cancel(id, std::chrono::seconds(30));
  run.join();
  EXPECT_EQ(c.outcome, TaskStore::CancelOutcome::kCancelled);
  EXPECT_EQ(c.status, "cancelled");
  EXPECT_EQ(token->reason(), CancelReason::kClient);
  auto t = store.Get(id);
  EXPECT_EQ((*t)["status"], "cancelled");
  EXPECT_EQ((*t)["result"]["content"][0]["text"], "so far");
  // An ended task is not cancelled again: it says so, with its status.
  const TaskStore::Cancelled again = store.Cancel(id);
  EXPECT_EQ(again.outcome, TaskStore::CancelOutcome::kEnded);
  EXPECT_EQ(again.status, "cancelled");
  EXPECT_EQ(store.Cancel("no-such-task").outcome, TaskStore::CancelOutcome::kNoSuchTask);
  // A run slower to end than the wait: the answer says it is still ending,
  // and the status stays working until it has.
  auto slow = std::make_shared<CancelToken>();
  std::string slow_id;
  ASSERT_TRUE(store.Create(slow, &slow_id));
  EXPECT_EQ(store.Cancel(slow_id, std::chrono::milliseconds(0)).outcome,
            TaskStore::CancelOutcome::kStillEnding);
  EXPECT_EQ((*store.Get(slow_id))["status"], "working");
  store.Finish(slow_id, json::object());
  EXPECT_EQ((*store.Get(slow_id))["status"], "cancelled");
  EXPECT_FALSE(store.Get("no-such-task"));
  EXPECT_FALSE(store.Known("no-such-task"));
}

TEST(TaskStoreTest, BoundedAndExpiredAfterKeep) {
  TaskOptions o = Quick();
  o.max_tasks = 1;
  o.keep = milliseconds(50);
  TaskStore store(o);
  std::string a, b;
  ASSERT_TRUE(store.Create(std::make_shared<CancelToken>(), &a));
  EXPECT_FALSE(store.Create(std::make_shared<CancelToken>(), &b)) << "past MCP_EXEC_MAX_TASKS";
  store.Finish(a, json::object());
  EXPECT_TRUE(store.Known(a));
  EXPECT_FALSE(store.Create(std::make_shared<CancelToken>(), &b)) << "an ended task still counts";
  std::this_thread::sleep_for(milliseconds(80));
  EXPECT_FALSE(store.Get(a)) << "expired";
  EXPECT_TRUE(store.Create(std::make_shared<CancelToken>(), &b));
  EXPECT_NE(a, b);
  store.Finish(b, json::object());
}

TEST(TaskStoreTest, IdsAreUnguessable) {
  TaskOptions o = Quick();
  o.max_tasks = 200;
  TaskStore store(o);
  std::set<std::string> ids;
  for (int i = 0; i < 200; ++i) {
    std::string id;
    ASSERT_TRUE(store.Create(std::make_shared<CancelToken>(), &id));
    EXPECT_EQ(id.size(), 22u);  // 16 random bytes, URL-safe base64
    ids.insert(id);
    store.Finish(id, json::object());
  }
  EXPECT_EQ(ids.size(), 200u);
}

TEST(TaskStoreTest, NoneWhenOff) {
  TaskOptions o = Quick();
  o.max_tasks = 0;
  TaskStore store(o);
  EXPECT_FALSE(store.enabled());
  std::string id;
  EXPECT_FALSE(store.Create(std::make_shared<CancelToken>(), &id));
}

TEST(TaskStoreTest, ShutdownEndsWorkingRunsAndWaitsForThem) {
  TaskStore store(Quick());
  auto token = std::make_shared<CancelToken>();
  std::string id;
  ASSERT_TRUE(store.Create(token, &id));
  std::atomic<bool> finished{false};
  std::thread run([&] {
    while (!token->cancelled()) std::this_thread::sleep_for(milliseconds(1));
    std::this_thread::sleep_for(milliseconds(50));
    finished = true;
    store.Finish(id, {{"reason", "shutdown"}});
  });
  store.Shutdown(milliseconds(5000));
  EXPECT_TRUE(finished);
  EXPECT_EQ(token->reason(), CancelReason::kShutdown);
  std::string later;
  EXPECT_FALSE(store.Create(std::make_shared<CancelToken>(), &later)) << "stopping";
  run.join();
}

// ------------------------------------------------ through an McpSession

// Runs "block" until it is cancelled (then says so); anything else at once.
// The server it belongs to keeps the tasks.
class TaskBackend : public ToolBackend {
 public:
  explicit TaskBackend(TaskOptions o) : server(*this, o) {}
  json ToolDescriptor() const override { return {{"name", "exec"}}; }
  std::string ToolName() const override { return "exec"; }
  std::variant<Work, json> Accept(const json& arguments, const CallContext&) override {
    const std::string code = arguments.value("code", "");
    return Work([code](CancelToken& cancel, const Progress& progress) {
      if (code != "block") return json{{"content", json::array()}, {"ran", code}};
      for (int i = 0; !cancel.cancelled(); ++i) {
        if (progress && i % 20 == 0) progress(i / 100.0, "tick");
        std::this_thread::sleep_for(milliseconds(5));
      }
      return json{
          {"content", json::array()},
          {"reason", cancel.reason() == CancelReason::kShutdown ? "shutdown" : "cancelled"}};
    });
  }
  Server server;
  TaskStore& store_ = server.tasks();
};

class Collector {
 public:
  McpSession::Sender sender() {
    return [this](const json& m) {
      std::lock_guard<std::mutex> lock(mu_);
      sent_.push_back(m);
      cv_.notify_all();
    };
  }
  json WaitFor(const json& id, milliseconds timeout = milliseconds(5000)) {
    std::unique_lock<std::mutex> lock(mu_);
    json found;
    cv_.wait_for(lock, timeout, [&] {
      for (auto& m : sent_) {
        if (m.contains("id") && m["id"] == id) {
          found = m;
          return true;
        }
      }
      return false;
    });
    return found;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<json> sent_;
};

json Request(const json& id, const std::string& method, json params, bool tasks) {
  params["_meta"] = {
      {stateless::kMetaProtocolVersion, stateless::kVersion},
      {stateless::kMetaClientCapabilities,
       tasks ? json{{"extensions", {{kTasksExtension, json::object()}}}} : json::object()},
      {stateless::kMetaClientInfo, {{"name", "t"}, {"version", "1"}}}};
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

json CallBlock(const json& id, bool tasks) {
  return Request(id, "tools/call", {{"name", "exec"}, {"arguments", {{"code", "block"}}}}, tasks);
}

TEST(SessionTaskTest, ALongCallBecomesATaskThatOutlivesItsSession) {
  TaskBackend backend(Quick());
  std::string id;
  {
    Collector out;
    McpSession session(backend.server, out.sender(), {});
    session.Handle(CallBlock(1, true));
    json created = out.WaitFor(1);
    ASSERT_EQ(created["result"]["resultType"], "task") << created.dump();
    EXPECT_EQ(created["result"]["status"], "working");
    EXPECT_TRUE(created["result"]["_meta"].contains(stateless::kMetaServerInfo));
    id = created["result"]["taskId"];
    // The task's answer is sent just before the call leaves the session's
    // count: on a loaded machine the check may come between the two.
    for (int i = 0; i < 100 && session.in_flight() != 0; ++i) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_EQ(session.in_flight(), 0) << "the session no longer waits for it";
  }  // the session (its connection) ends; the task's run goes on
  std::this_thread::sleep_for(milliseconds(250));
  json working = *backend.store_.Get(id);
  EXPECT_EQ(working["status"], "working");
  EXPECT_EQ(working["statusMessage"], "running for 0 s; newest output: tick");

  Collector out;
  McpSession other(backend.server, out.sender(), {});
  other.Handle(Request(2, "tasks/get", {{"taskId", id}}, false));
  EXPECT_EQ(out.WaitFor(2)["error"]["code"], stateless::kMissingRequiredClientCapability);
  other.Handle(Request(3, "tasks/cancel", {{"taskId", id}}, true));
  EXPECT_EQ(out.WaitFor(3)["result"]["resultType"], "complete");
  // The cancel was answered once the run had ended: the status changed.
  other.Handle(Request(100, "tasks/get", {{"taskId", id}}, true));
  json task = out.WaitFor(100)["result"];
  EXPECT_EQ(task["status"], "cancelled") << task.dump();
  EXPECT_EQ(task["resultType"], "complete");
  EXPECT_EQ(task["result"]["reason"], "cancelled");
  EXPECT_EQ(task["result"]["resultType"], "complete") << "the call's own result, as given";
  // Cancelling it again: it already ended, and the error says so.
  other.Handle(Request(4, "tasks/cancel", {{"taskId", id}}, true));
  const json again = out.WaitFor(4);
  EXPECT_EQ(again["error"]["code"], -32602) << again.dump();
  EXPECT_NE(again["error"]["message"].get<std::string>().find("already ended (status cancelled)"),
            std::string::npos)
      << again.dump();
}

TEST(SessionTaskTest, WithoutTheExtensionOrWhenQuickTheCallIsAnsweredInPlace) {
  TaskBackend backend(Quick());
  Collector out;
  McpSession session(backend.server, out.sender(), {});
  session.Handle(
      Request(1, "tools/call", {{"name", "exec"}, {"arguments", {{"code", "x"}}}}, true));
  json quick = out.WaitFor(1);
  EXPECT_EQ(quick["result"]["ran"], "x");
  EXPECT_EQ(quick["result"]["resultType"], "complete");

  session.Handle(CallBlock(2, false));
  EXPECT_TRUE(out.WaitFor(2, milliseconds(300)).is_null()) << "no task for this client";
  EXPECT_EQ(session.in_flight(), 1);
  EXPECT_EQ(backend.store_.size(), 0u);
  session.CancelAll(CancelReason::kShutdown);
  EXPECT_EQ(out.WaitFor(2)["result"]["reason"], "shutdown");
}

// The extension decides per request, in the 2025 era too: initialize's
// declaration alone makes no task.
TEST(SessionTaskTest, TheLegacyEraDeclaresPerRequest) {
  TaskBackend backend(Quick());
  Collector out;
  McpSession session(backend.server, out.sender(), {});
  session.Handle({{"jsonrpc", "2.0"},
                  {"id", 0},
                  {"method", "initialize"},
                  {"params",
                   {{"protocolVersion", "2025-11-25"},
                    {"capabilities", {{"extensions", {{kTasksExtension, json::object()}}}}}}}});
  json init = out.WaitFor(0);
  EXPECT_EQ(init["result"]["capabilities"]["extensions"],
            json({{kTasksExtension, json::object()}}));
  session.Handle({{"jsonrpc", "2.0"},
                  {"id", 9},
                  {"method", "tools/call"},
                  {"params", {{"name", "exec"}, {"arguments", {{"code", "block"}}}}}});
  EXPECT_TRUE(out.WaitFor(9, milliseconds(300)).is_null()) << "answered in place, not a task";
  const json declared = {
      {stateless::kMetaClientCapabilities, {{"extensions", {{kTasksExtension, json::object()}}}}}};
  session.Handle(
      {{"jsonrpc", "2.0"},
       {"id", 1},
       {"method", "tools/call"},
       {"params", {{"name", "exec"}, {"arguments", {{"code", "block"}}}, {"_meta", declared}}}});
  json created = out.WaitFor(1);
  ASSERT_EQ(created["result"]["resultType"], "task") << created.dump();
  EXPECT_FALSE(created["result"].contains("_meta")) << "no 2026-07-28 envelope in 2025";
  const std::string id = created["result"]["taskId"];
  // notifications/cancelled no longer reaches a task (the extension's rule).
  session.Handle(
      {{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 1}}}});
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ((*backend.store_.Get(id))["status"], "working");
  backend.store_.Shutdown(milliseconds(5000));
  json ended = *backend.store_.Get(id);
  EXPECT_EQ(ended["status"], "completed");
  EXPECT_EQ(ended["result"]["reason"], "shutdown");
  EXPECT_EQ(ended["statusMessage"],
            "ended by the server's shutdown; the output so far is in result");
  session.CancelAll(CancelReason::kShutdown);
  EXPECT_EQ(out.WaitFor(9)["result"]["reason"], "shutdown");
}

}  // namespace
}  // namespace mcpexec

namespace mcpexec {
namespace {

// Issue 36, point 12: a finished task held its whole result in memory
// (about 26 MiB for a big one, 830 MiB at 32 tasks). A result past the
// spill's threshold waits in the spill (the resource store, on disk) and
// comes back whole from tasks/get; one the spill lost says so.
class MemorySpill : public TaskResultSpill {
 public:
  std::optional<std::string> Save(const std::string& bytes) override {
    if (refuse) return std::nullopt;
    kept["k" + std::to_string(kept.size())] = bytes;
    return "k" + std::to_string(kept.size() - 1);
  }
  std::optional<std::string> Load(const std::string& key) override {
    auto it = kept.find(key);
    if (it == kept.end()) return std::nullopt;
    return it->second;
  }
  std::map<std::string, std::string> kept;
  bool refuse = false;
};

TEST(TaskStoreTest, ABigResultWaitsInTheSpillAndComesBackWhole) {
  auto spill = std::make_shared<MemorySpill>();
  TaskOptions o = Quick();
  o.spill_over_bytes = 1024;
  TaskStore store(o);
  store.SetSpill(spill);
  std::string small_id, big_id, lost_id, kept_id;
  for (std::string* id : {&small_id, &big_id, &lost_id, &kept_id}) {
    ASSERT_TRUE(store.Create(std::make_shared<CancelToken>(), id));
  }
  const json big = {{"content", {{{"type", "text"}, {"text", std::string(1 << 20, 'x')}}}},
                    {"isError", false}};
  store.Finish(small_id, {{"content", json::array()}, {"isError", false}});
  store.Finish(big_id, big);
  EXPECT_EQ(spill->kept.size(), 1u) << "only the big one";
  EXPECT_EQ((*store.Get(big_id))["result"], big);
  EXPECT_EQ((*store.Get(small_id))["result"]["isError"], false);
  store.Finish(lost_id, big);
  spill->kept.erase("k1");
  json lost = (*store.Get(lost_id))["result"];
  EXPECT_EQ(lost["isError"], true);
  EXPECT_NE(lost["content"][0]["text"].get<std::string>().find("is gone"), std::string::npos);
  spill->refuse = true;  // the spill is full: the result stays in memory
  store.Finish(kept_id, big);
  EXPECT_EQ((*store.Get(kept_id))["result"], big);
}

}  // namespace
}  // namespace mcpexec
