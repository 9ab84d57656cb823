// A run's tool channel against a scripted gateway: the run's end of the
// socket pair is the test's, and a thread of the test's plays the run's I/O
// loop (polls the channel's descriptor, calls OnReadable, as
// Executor::PumpUntilEnded does), so what a run may send (frames of any
// shape, size and count, split or at once) and what it gets back are
// checked without a zygote, a run or an upstream.
#include "supervisor/tool_channel.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/metrics.h"

namespace mcpexec {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Answers every call with its script and remembers what it was asked; a
// call can be held until Release() (a slow upstream).
class ScriptedGateway : public ToolGateway {
 public:
  struct Seen {
    std::string server, tool;
    json arguments;
    Clock::time_point deadline;
    int64_t max_bytes = 0;
  };

  json Catalog() override { return {{"fs", {{"tools", json::array({{{"name", "read"}}})}}}}; }
  ToolAnswer Call(const std::string& server, const std::string& tool, const json& arguments,
                  Clock::time_point deadline, int64_t max_bytes) override {
    std::unique_lock<std::mutex> lock(mu_);
    seen_.push_back({server, tool, arguments, deadline, max_bytes});
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !hold_; });
    ToolAnswer a;
    if (fail_) {
      a.error = "the tool said no";
    } else {
      a.ok = true;
      a.value = {{"echo", arguments}};
    }
    return a;
  }

  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = true;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hold_ = false;
    }
    cv_.notify_all();
  }
  void FailCalls() {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = true;
  }
  bool WaitEntered(int n, Clock::duration within = 10s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, within, [&] { return entered_ >= n; });
  }
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Seen> seen_;
  int entered_ = 0;
  bool hold_ = false, fail_ = false;
};

std::string Frame(const std::string& body) {
  const uint32_t n = static_cast<uint32_t>(body.size());
  std::string f(4, '\0');
  for (int i = 0; i < 4; ++i) f[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return f + body;
}

class ToolChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    run_.Reset(sv[0]);
    server_end_.Reset(sv[1]);
    metrics_.DeclareUpstreams({"fs"});  // code mode's counters show
  }
  void TearDown() override {
    StopLoop();
    channel_.reset();
    gateway_->Release();
    run_.Reset();
    EXPECT_TRUE(pool_.WaitIdle(10s)) << "a channel's thread outlived its test";
  }

  ToolChannel& Start(ToolChannelLimits limits = {}, Clock::duration timeout = 30s) {
    StopLoop();
    channel_.reset();
    deadline_ = Clock::now() + timeout;
    channel_ = std::make_unique<ToolChannel>(gateway_, std::move(server_end_), deadline_, limits,
                                             &metrics_, pool_);
    loop_stop_.Reset(eventfd(0, EFD_CLOEXEC));
    loop_ = std::thread([this] {
      for (;;) {
        pollfd p[2] = {{channel_->fd(), POLLIN, 0}, {loop_stop_.get(), POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR) return;
        if (p[1].revents) return;
        if (p[0].revents) channel_->OnReadable();
      }
    });
    return *channel_;
  }
  // The run's loop ends (as it does before the executor stops the channel).
  void StopLoop() {
    if (!loop_.joinable()) return;
    uint64_t one = 1;
    ASSERT_EQ(write(loop_stop_.get(), &one, sizeof one), 8);
    loop_.join();
  }

  void SendRaw(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t w = send(run_.get(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      ASSERT_GT(w, 0) << strerror(errno);
      done += static_cast<size_t>(w);
    }
  }
  void Send(const json& j) { SendRaw(Frame(j.dump())); }

  // Reads n bytes within the time left; false on EOF or when none came.
  bool ReadFull(char* p, size_t n, Clock::time_point until) {
    while (n > 0) {
      pollfd pf{run_.get(), POLLIN, 0};
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      if (ms.count() <= 0 || poll(&pf, 1, static_cast<int>(ms.count())) <= 0) return false;
      ssize_t got = read(run_.get(), p, n);
      if (got <= 0) return false;
      p += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  }
  // The next frame the run is sent, or nothing (EOF, or none within 10 s).
  std::optional<json> Next() {
    const auto until = Clock::now() + 10s;
    unsigned char head[4];
    if (!ReadFull(reinterpret_cast<char*>(head), 4, until)) return std::nullopt;
    const uint32_t n = head[0] | (head[1] << 8) | (head[2] << 16) | (uint32_t{head[3]} << 24);
    std::string body(n, '\0');
    if (!ReadFull(body.data(), n, until)) return std::nullopt;
    return json::parse(body);
  }
  // The channel has ended: the run's end reads EOF (within 10 s).
  bool SeesEof() {
    pollfd pf{run_.get(), POLLIN, 0};
    if (poll(&pf, 1, 10000) <= 0) return false;
    char c;
    return read(run_.get(), &c, 1) == 0;
  }
  std::string Scrape() { return metrics_.Render({}); }

  std::shared_ptr<ScriptedGateway> gateway_ = std::make_shared<ScriptedGateway>();
  Metrics metrics_;
  UniqueFd run_, server_end_;
  Clock::time_point deadline_;
  CallPool pool_;  // joined before what its threads point at goes
  std::unique_ptr<ToolChannel> channel_;
  UniqueFd loop_stop_;
  std::thread loop_;
};

TEST_F(ToolChannelTest, AListIsAnsweredWithTheCatalog) {
  Start();
  Send({{"id", 1}, {"op", "list"}});
  auto a = Next();
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["id"], 1);
  EXPECT_EQ((*a)["ok"], true);
  EXPECT_EQ((*a)["value"]["fs"]["tools"][0]["name"], "read") << a->dump();
  EXPECT_EQ(channel_->calls(), 0) << "a list is not a call";
}

TEST_F(ToolChannelTest, ACallGoesToTheGatewayWithTheRunsDeadlineAndBound) {
  ToolChannelLimits limits;
  limits.max_result_bytes = 12345;
  Start(limits);
  Send({{"id", 7}, {"op", "call"}, {"server", "fs"}, {"tool", "read"}, {"arguments", {{"p", 1}}}});
  auto a = Next();
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["id"], 7);
  EXPECT_EQ((*a)["ok"], true);
  EXPECT_EQ((*a)["value"]["echo"]["p"], 1) << a->dump();
  auto seen = gateway_->seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].server, "fs");
  EXPECT_EQ(seen[0].tool, "read");
  EXPECT_EQ(seen[0].deadline, deadline_);
  EXPECT_EQ(seen[0].max_bytes, 12345);
  EXPECT_EQ(channel_->calls(), 1);
}

TEST_F(ToolChannelTest, ACallWithoutArgumentsSendsAnEmptyObject) {
  Start();
  Send({{"id", 1}, {"op", "call"}, {"server", "fs"}, {"tool", "read"}});
  ASSERT_TRUE(Next());
  ASSERT_EQ(gateway_->seen().size(), 1u);
  EXPECT_EQ(gateway_->seen()[0].arguments, json::object());
}

TEST_F(ToolChannelTest, AToolsErrorComesBackAsKindTool) {
  gateway_->FailCalls();
  Start();
  Send({{"id", 3}, {"op", "call"}, {"server", "fs"}, {"tool", "read"}});
  auto a = Next();
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["ok"], false);
  EXPECT_EQ((*a)["kind"], "tool");
  EXPECT_EQ((*a)["error"], "the tool said no");
}

TEST_F(ToolChannelTest, CallsPastTheLimitAreRefusedSayingTheNumberAndNotCounted) {
  ToolChannelLimits limits;
  limits.max_calls = 2;
  Start(limits);
  for (int id = 1; id <= 3; ++id) {
    Send({{"id", id}, {"op", "call"}, {"server", "fs"}, {"tool", "read"}});
  }
  // Answered side by side: two of the three go through, in any order, and
  // the one that came last to the count is refused.
  std::optional<json> refused;
  int ok = 0;
  for (int i = 0; i < 3; ++i) {
    auto a = Next();
    ASSERT_TRUE(a);
    if ((*a)["ok"] == true) {
      ++ok;
    } else {
      refused = a;
    }
  }
  EXPECT_EQ(ok, 2);
  ASSERT_TRUE(refused);
  EXPECT_EQ((*refused)["kind"], "limit");
  EXPECT_NE((*refused)["error"].get<std::string>().find("its 2 nested tool calls"),
            std::string::npos)
      << refused->dump();
  EXPECT_NE((*refused)["error"].get<std::string>().find("MCP_EXEC_MAX_TOOL_CALLS"),
            std::string::npos);
  EXPECT_EQ(channel_->calls(), 2);
  EXPECT_EQ(gateway_->seen().size(), 2u);
  // The channel stays: a list is still answered.
  Send({{"id", 4}, {"op", "list"}});
  auto list = Next();
  ASSERT_TRUE(list);
  EXPECT_EQ((*list)["ok"], true);
}

TEST_F(ToolChannelTest, ACallAfterTheRunsDeadlineIsRefused) {
  Start({}, -1s);
  Send({{"id", 1}, {"op", "call"}, {"server", "fs"}, {"tool", "read"}});
  auto a = Next();
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["kind"], "limit");
  EXPECT_NE((*a)["error"].get<std::string>().find("timeout has passed"), std::string::npos);
  EXPECT_TRUE(gateway_->seen().empty());
}

TEST_F(ToolChannelTest, AnUnknownOpOrACallWithoutNamesIsRefusedAndTheChannelStays) {
  Start();
  Send({{"id", 1}, {"op", "delete"}});
  auto a = Next();
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["kind"], "refused");
  EXPECT_NE((*a)["error"].get<std::string>().find("unknown op"), std::string::npos);
  Send({{"id", 2}, {"op", "call"}, {"server", 5}, {"tool", "read"}});
  a = Next();
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["id"], 2);
  EXPECT_EQ((*a)["kind"], "refused");
  EXPECT_NE((*a)["error"].get<std::string>().find("\"server\" and \"tool\""), std::string::npos);
  Send({{"id", 3}, {"op", "list"}});
  a = Next();
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["ok"], true);
  EXPECT_TRUE(gateway_->seen().empty());
}

TEST_F(ToolChannelTest, AFrameThatIsNotACallEndsTheChannelSayingWhy) {
  for (const std::string body : {"[1,2]", "{\"id\":\"x\",\"op\":\"list\"}", "not json"}) {
    SetUp();  // a fresh pair and channel per frame
    Start();
    SendRaw(Frame(body));
    auto last = Next();
    ASSERT_TRUE(last) << body;
    EXPECT_TRUE((*last)["id"].is_null()) << last->dump();
    EXPECT_EQ((*last)["kind"], "refused");
    EXPECT_NE((*last)["error"].get<std::string>().find("not a call"), std::string::npos);
    EXPECT_TRUE(SeesEof()) << body;
  }
  EXPECT_NE(Scrape().find("mcp_exec_tool_frames_refused_total{why=\"malformed frame\"} 3"),
            std::string::npos)
      << Scrape();
}

TEST_F(ToolChannelTest, AFrameLongerThanTheBoundEndsTheChannelBeforeItsBodyIsRead) {
  ToolChannelLimits limits;
  limits.max_result_bytes = 1000;
  Start(limits);
  const int64_t max = ToolChannel::MaxRequestBytes(limits);
  const uint32_t n = static_cast<uint32_t>(max + 1);
  std::string head(4, '\0');
  for (int i = 0; i < 4; ++i) head[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  SendRaw(head);  // no body: the head alone is refused
  auto last = Next();
  ASSERT_TRUE(last);
  const std::string error = (*last)["error"];
  EXPECT_NE(error.find(std::to_string(n) + " bytes is more than the " + std::to_string(max)),
            std::string::npos)
      << error;
  EXPECT_TRUE(SeesEof());
  EXPECT_NE(Scrape().find("why=\"oversized frame\"} 1"), std::string::npos);
}

TEST_F(ToolChannelTest, AFrameNestedTooDeepIsRefusedUnderItsIdAndTheChannelStays) {
  Start();
  const std::string deep(100000, '[');
  SendRaw(Frame("{\"id\":9,\"op\":\"call\",\"server\":\"fs\",\"tool\":\"read\",\"arguments\":" +
                deep + std::string(100000, ']') + "}"));
  auto a = Next();
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["id"], 9);
  EXPECT_EQ((*a)["kind"], "refused");
  EXPECT_NE((*a)["error"].get<std::string>().find("the arguments are "), std::string::npos)
      << a->dump();
  EXPECT_TRUE(gateway_->seen().empty());
  Send({{"id", 10}, {"op", "list"}});
  a = Next();
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["id"], 10);
  EXPECT_NE(Scrape().find("why=\"too deep\"} 1"), std::string::npos);
}

TEST_F(ToolChannelTest, AFrameSentAByteAtATimeIsReadWhole) {
  Start();
  const std::string f = Frame(json{{"id", 5}, {"op", "list"}}.dump());
  for (char c : f) {
    SendRaw(std::string(1, c));
    std::this_thread::sleep_for(1ms);
  }
  auto a = Next();
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["id"], 5);
  EXPECT_EQ((*a)["ok"], true);
}

TEST_F(ToolChannelTest, EveryFrameCountsAgainstTheChannelsBudget) {
  ToolChannelLimits limits;
  limits.max_calls = 1;
  Start(limits);
  const int64_t frames = ToolChannel::MaxFrames(limits);
  ASSERT_EQ(frames, 1 + ToolChannel::kExtraFrames);
  for (int64_t id = 1; id <= frames; ++id) {
    Send({{"id", id}, {"op", "list"}});
    auto a = Next();
    ASSERT_TRUE(a) << "frame " << id;
    ASSERT_EQ((*a)["ok"], true) << "frame " << id;
  }
  Send({{"id", frames + 1}, {"op", "list"}});
  auto last = Next();
  ASSERT_TRUE(last);
  EXPECT_TRUE((*last)["id"].is_null());
  EXPECT_NE(
      (*last)["error"].get<std::string>().find("past the " + std::to_string(frames) + " frames"),
      std::string::npos)
      << last->dump();
  EXPECT_TRUE(SeesEof());
  EXPECT_NE(Scrape().find("why=\"channel budget spent\"} 1"), std::string::npos);
}

TEST_F(ToolChannelTest, AnIdleChannelHoldsNoThread) {
  Start();
  EXPECT_TRUE(pool_.WaitIdle(10s)) << "a channel with no call to answer holds no thread";
  Send({{"id", 1}, {"op", "call"}, {"server", "fs"}, {"tool", "read"}});
  ASSERT_TRUE(Next());
  EXPECT_TRUE(pool_.WaitIdle(10s)) << "the thread that answered went back to the pool";
  EXPECT_NE(channel_->fd(), -1) << "the channel still reads";
}

std::string ThreeCalls() {
  std::string three;
  for (int id = 1; id <= 3; ++id) {
    three += Frame(json{
        {"id", id}, {"op", "call"}, {"server", "fs"}, {"tool", "read"}, {"arguments", {{"n", id}}}}
                       .dump());
  }
  return three;
}

TEST_F(ToolChannelTest, OneInFlightAnswersCallsOneAtATimeInOrder) {
  gateway_->Hold();
  ToolChannelLimits limits;
  limits.max_in_flight = 1;
  Start(limits);
  SendRaw(ThreeCalls());
  ASSERT_TRUE(gateway_->WaitEntered(1));
  EXPECT_FALSE(gateway_->WaitEntered(2, 200ms))
      << "a second call reached the gateway before the first ended";
  gateway_->Release();
  for (int id = 1; id <= 3; ++id) {
    auto a = Next();
    ASSERT_TRUE(a);
    EXPECT_EQ((*a)["id"], id);
    EXPECT_EQ((*a)["value"]["echo"]["n"], id);
  }
}

// Up to max_in_flight calls are at the gateway at once; the next waits for
// one of them, and every answer carries its call's id.
TEST_F(ToolChannelTest, CallsOverlapUpToMaxInFlight) {
  gateway_->Hold();
  ToolChannelLimits limits;
  limits.max_in_flight = 2;
  limits.max_calls = 3;
  Start(limits);
  SendRaw(ThreeCalls());
  ASSERT_TRUE(gateway_->WaitEntered(2)) << "the second call waited for the first";
  EXPECT_FALSE(gateway_->WaitEntered(3, 200ms)) << "a third call passed max_in_flight 2";
  gateway_->Release();
  std::set<int> ids;
  for (int i = 0; i < 3; ++i) {
    auto a = Next();
    ASSERT_TRUE(a);
    EXPECT_EQ((*a)["value"]["echo"]["n"], (*a)["id"]);
    ids.insert((*a)["id"].get<int>());
  }
  EXPECT_EQ(ids, (std::set<int>{1, 2, 3}));
  EXPECT_EQ(channel_->calls(), 3);
  // Calls side by side never pass the cap: a fourth is refused.
  Send({{"id", 4}, {"op", "call"}, {"server", "fs"}, {"tool", "read"}});
  auto refused = Next();
  ASSERT_TRUE(refused);
  EXPECT_EQ((*refused)["kind"], "limit") << refused->dump();
  EXPECT_EQ(channel_->calls(), 3);
}

// A burst right after a list (whose thread still lingers) is spread over
// as many threads as it needs, not handed to the one lingering thread.
TEST_F(ToolChannelTest, ABurstAfterAListStillOverlaps) {
  gateway_->Hold();
  ToolChannelLimits limits;
  limits.max_in_flight = 3;
  Start(limits);
  Send({{"id", 100}, {"op", "list"}});
  ASSERT_TRUE(Next());
  SendRaw(ThreeCalls());
  EXPECT_TRUE(gateway_->WaitEntered(3)) << "the burst went to one thread";
  gateway_->Release();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Next());
}

TEST_F(ToolChannelTest, StopEndsAnIdleChannelAndTheRunReadsEof) {
  Start();
  StopLoop();
  channel_->Stop();
  EXPECT_TRUE(SeesEof());
  EXPECT_TRUE(pool_.WaitIdle(10s));
  channel_->Stop();  // a second Stop is harmless
}

TEST_F(ToolChannelTest, ARunThatClosesItsEndEndsTheChannel) {
  Start();
  run_.Reset();
  const auto until = Clock::now() + 10s;
  while (channel_->fd() != -1 && Clock::now() < until) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(channel_->fd(), -1) << "the loop still polls a channel whose run closed its end";
  EXPECT_TRUE(pool_.WaitIdle(10s));
}

TEST_F(ToolChannelTest, ACallInFlightOutlivesTheChannelAndEndsWhenTheGatewayAnswers) {
  gateway_->Hold();
  Start();
  Send({{"id", 1}, {"op", "call"}, {"server", "fs"}, {"tool", "read"}});
  ASSERT_TRUE(gateway_->WaitEntered(1));
  // The run ended: the channel goes at once, the call is still the gateway's.
  StopLoop();
  const auto before = Clock::now();
  channel_.reset();
  EXPECT_LT(Clock::now() - before, 1s) << "ending a channel never waits for a call";
  EXPECT_FALSE(pool_.WaitIdle(50ms)) << "the call's thread is still in the gateway";
  gateway_->Release();
  EXPECT_TRUE(pool_.WaitIdle(10s));
  // Then the run's end sees the channel end (after the late answer, when
  // the socket still took it: no run reads it once its run has ended).
  if (auto late = Next()) {
    EXPECT_EQ((*late)["id"], 1) << late->dump();
  }
  EXPECT_TRUE(SeesEof());
}

}  // namespace
}  // namespace mcpexec
