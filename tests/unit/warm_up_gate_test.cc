// The gate the transports serve through while the zygote warms up: what it
// answers at once, what waits, in which order early calls reach the request
// path, and how a failed start or a cancel ends a wait.
#include "tool/warm_up_gate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/cancel.h"
#include "base/metrics.h"
#include "model/config.h"
#include "protocol/server.h"
#include "protocol/stateless.h"
#include "tool/contract.h"

namespace mcpexec {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// The request path behind the gate: records the calls it accepted, in
// order, and runs each as "ran:<code>".
class PathBackend : public ToolBackend, public ServerHealth {
 public:
  json ToolDescriptor() const override { return {{"name", "exec"}, {"description", "warm"}}; }
  std::string ToolName() const override { return "exec"; }
  std::variant<Work, json> Accept(const json& arguments, const CallContext&) override {
    const std::string code = arguments.value("code", "");
    {
      std::lock_guard<std::mutex> lock(mu);
      accepted.push_back(code);
    }
    return Work([code](CancelToken&, const Progress&) {
      return json{{"content", json::array({{{"type", "text"}, {"text", "ran:" + code}}})}};
    });
  }
  void ServerStopping() override { stopping = true; }
  bool Ready() const override { return true; }
  std::string MetricsText(int64_t, int64_t) const override { return "path metrics"; }
  void RecordHttpRefused(int) override {}
  void RecordMcpSessionTable(bool) override {}

  std::vector<std::string> Accepted() {
    std::lock_guard<std::mutex> lock(mu);
    return accepted;
  }

  std::mutex mu;
  std::vector<std::string> accepted;
  bool stopping = false;
};

std::string TextOf(const json& result) { return result["content"][0]["text"]; }

class WarmUpGateTest : public ::testing::Test {
 protected:
  // What the gate answers for a call: at once, or by running its work on
  // a thread of its own (as a session does).
  std::future<json> Call(const std::string& code, std::shared_ptr<CancelToken> cancel = nullptr) {
    if (!cancel) cancel = std::make_shared<CancelToken>();
    auto accepted = gate_.Accept({{"code", code}}, CallContext{});
    if (auto* answer = std::get_if<json>(&accepted)) {
      std::promise<json> p;
      p.set_value(*answer);
      return p.get_future();
    }
    auto work = std::get<ToolBackend::Work>(std::move(accepted));
    return std::async(std::launch::async, [work = std::move(work), cancel] {
      return work(*cancel, ToolBackend::Progress());
    });
  }

  Config config_;
  Metrics metrics_;
  WarmUpGate gate_{config_, metrics_};
  PathBackend path_;
};

TEST_F(WarmUpGateTest, TheHandshakesPartsAreAnsweredBeforeThePathIsUp) {
  EXPECT_EQ(gate_.ToolName(), ExecToolName());
  EXPECT_EQ(gate_.Instructions(), ExecInstructions(config_));
  EXPECT_EQ(gate_.CacheScope(), "public");
  EXPECT_FALSE(gate_.Ready());
  EXPECT_NE(gate_.MetricsText(0, 0).find("mcp_exec"), std::string::npos);
  // Arguments the contract refuses need no sandbox.
  EXPECT_EQ(TextOf(Call("").get()), "code must not be empty");
}

TEST_F(WarmUpGateTest, AnEarlyCallWaitsForThePathThenRunsThere) {
  std::future<json> early = Call("print(1)");
  EXPECT_EQ(early.wait_for(50ms), std::future_status::timeout) << "ran before the path was up";
  gate_.Open(path_, path_);
  EXPECT_EQ(TextOf(early.get()), "ran:print(1)");
  EXPECT_TRUE(gate_.Ready());
  EXPECT_EQ(gate_.MetricsText(0, 0), "path metrics");
  EXPECT_EQ(gate_.ToolDescriptor()["description"], "warm");
  // Once open, a call goes straight to the path.
  EXPECT_EQ(TextOf(Call("late").get()), "ran:late");
}

TEST_F(WarmUpGateTest, EarlyCallsReachThePathInTheOrderTheyCame) {
  std::vector<std::future<json>> calls;
  for (int i = 0; i < 8; ++i) calls.push_back(Call("c" + std::to_string(i)));
  std::this_thread::sleep_for(20ms);  // every thread waiting, in any order
  gate_.Open(path_, path_);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(TextOf(calls[i].get()), "ran:c" + std::to_string(i));
  EXPECT_EQ(path_.Accepted(),
            (std::vector<std::string>{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"}));
}

TEST_F(WarmUpGateTest, ACallCancelledWhileItWaitsNeverReachesThePath) {
  auto cancel = std::make_shared<CancelToken>();
  std::future<json> cancelled = Call("cancelled", cancel);
  std::future<json> next = Call("next");
  cancel->Cancel();
  EXPECT_EQ(TextOf(cancelled.get()), "cancelled before the code ran");
  gate_.Open(path_, path_);
  EXPECT_EQ(TextOf(next.get()), "ran:next") << "the cancelled call's turn was passed on";
  EXPECT_EQ(path_.Accepted(), std::vector<std::string>{"next"});
  // Cancelled for a shutdown: said so.
  auto shutdown = std::make_shared<CancelToken>();
  WarmUpGate other(config_, metrics_);
  auto accepted = other.Accept({{"code", "x"}}, CallContext{});
  shutdown->Cancel(CancelReason::kShutdown);
  json r = std::get<ToolBackend::Work>(accepted)(*shutdown, ToolBackend::Progress());
  EXPECT_EQ(TextOf(r), "the server stopped before the code ran");
}

TEST_F(WarmUpGateTest, AnEarlyCallsWorkDroppedUnrunPassesItsTurn) {
  { auto dropped = gate_.Accept({{"code", "dropped"}}, CallContext{}); }
  std::future<json> next = Call("next");
  gate_.Open(path_, path_);
  EXPECT_EQ(TextOf(next.get()), "ran:next");
  EXPECT_EQ(path_.Accepted(), std::vector<std::string>{"next"});
}

TEST_F(WarmUpGateTest, AFailedStartAnswersWaitingAndLaterCallsWithItsReason) {
  std::future<json> early = Call("print(1)");
  gate_.Fail("the server could not start: no zygote");
  EXPECT_EQ(TextOf(early.get()), "the server could not start: no zygote");
  EXPECT_EQ(TextOf(Call("print(2)").get()), "the server could not start: no zygote");
  EXPECT_NE(gate_.ToolDescriptor()["description"].get<std::string>().find("no zygote"),
            std::string::npos);
  // An open path is not closed by a later Fail (the shutdown's).
  WarmUpGate open(config_, metrics_);
  open.Open(path_, path_);
  open.Fail("the server is stopping");
  EXPECT_TRUE(open.Ready());
}

// The tasks are the server's from the start, not the request path's: a
// call of a client that declared the extension, sent during the warm-up,
// becomes a task while it still waits for the path, and the task ends once
// the path ran it.
TEST_F(WarmUpGateTest, ACallMadeDuringTheWarmUpMayBecomeATaskBeforeThePathIsUp) {
  TaskOptions quick;
  quick.after = 50ms;
  quick.max_tasks = 4;
  Server server(gate_, quick);
  std::mutex mu;
  std::vector<json> sent;
  McpSession session(server,
                     [&](const json& m) {
                       std::lock_guard<std::mutex> lock(mu);
                       sent.push_back(m);
                     },
                     {});
  auto find = [&](int id) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu);
        for (const json& m : sent) {
          if (m.value("id", json()) == id) return m;
        }
      }
      std::this_thread::sleep_for(10ms);
    }
    return json();
  };
  const json meta = {
      {stateless::kMetaProtocolVersion, stateless::kVersion},
      {stateless::kMetaClientCapabilities, {{"extensions", {{kTasksExtension, json::object()}}}}}};
  session.Handle({{"jsonrpc", "2.0"},
                  {"id", 1},
                  {"method", "tools/call"},
                  {"params", {{"name", "exec"}, {"arguments", {{"code", "x"}}}, {"_meta", meta}}}});
  const json created = find(1);
  ASSERT_EQ(created["result"]["resultType"], "task") << created.dump();
  EXPECT_TRUE(path_.Accepted().empty()) << "the path is not up yet";
  const std::string task = created["result"]["taskId"];
  gate_.Open(path_, path_);
  json got;
  for (int i = 0; i < 500; ++i) {
    got = *server.tasks().Get(task);
    if (got["status"] == "completed") break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(got["status"], "completed") << got.dump();
  EXPECT_EQ(TextOf(got["result"]), "ran:x");
}

}  // namespace
}  // namespace mcpexec
