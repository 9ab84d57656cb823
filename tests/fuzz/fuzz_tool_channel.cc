// A run -> the supervisor, code mode: the input is what a run writes on its
// tool channel (little-endian u32 lengths, then JSON frames), read by the
// real ToolChannel from a socket pair, with a thread playing the run's I/O
// loop (polls the channel's descriptor, calls OnReadable). Its gateway is a
// stand-in with one tool whose input schema has a "pattern" and a
// "format": "date-time", checked by the real upstream::ArgumentSchema (RE2
// and the RFC 3339 scanner), and a small budget (4 calls, 68 frames).
// Checked: every answer is a frame of at most the result bound, holding a
// JSON object with "id" and "ok"; the channel ends once the input ends
// (or the harness stops it), and no thread of its outlives it; nothing crashes, recurses past the
// stack or leaks. Seeds: calls, lists, deep nesting under an id, huge lengths.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "base/bounded_json.h"
#include "base/metrics.h"
#include "base/unique_fd.h"
#include "model/tool_gateway.h"
#include "supervisor/tool_channel.h"
#include "upstream/schema.h"

namespace {

using json = nlohmann::json;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  fprintf(stderr, "fuzz_tool_channel: %s %s\n", what, detail.substr(0, 200).c_str());
  abort();
}

class Gateway : public mcpexec::ToolGateway {
 public:
  Gateway() {
    std::string why;
    std::vector<std::string> left;
    schema_ = mcpexec::upstream::ArgumentSchema::Compile(
        json::parse(R"({"type":"object","required":["at"],"properties":{
          "at":{"type":"string","format":"date-time"},
          "word":{"type":"string","pattern":"^(a|b)+c?$"},
          "deep":{"type":"array","items":{"type":"array"}}}})"),
        &why, &left);
    if (!schema_) Fail("schema", why);
  }
  json Catalog() override {
    return {{"tiny", {{"tools", {{{"name", "when"}, {"description", "d"}}}}}}};
  }
  mcpexec::ToolAnswer Call(const std::string& server, const std::string& tool,
                           const json& arguments, std::chrono::steady_clock::time_point,
                           int64_t max_bytes) override {
    mcpexec::ToolAnswer a;
    if (server != "tiny" || tool != "when") {
      a.error = "no such tool";
      return a;
    }
    if (!arguments.is_object()) {
      a.error = "not an object";
      return a;
    }
    if (std::string why = schema_->Check(arguments); !why.empty()) {
      a.error = why;
      return a;
    }
    std::string text = arguments.dump();
    if (static_cast<int64_t>(text.size()) > max_bytes) {
      a.error = "too large";
      return a;
    }
    a.ok = true;
    a.value = arguments;
    return a;
  }

 private:
  std::unique_ptr<mcpexec::upstream::ArgumentSchema> schema_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static mcpexec::Metrics metrics;
  static bool declared = false;
  if (!declared) {
    metrics.DeclareUpstreams({"tiny"});
    declared = true;
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) Fail("socketpair");
  mcpexec::UniqueFd run(pair[1]);
  const mcpexec::ToolChannelLimits limits{4, 4096};
  mcpexec::CallPool pool;
  auto channel = std::make_unique<mcpexec::ToolChannel>(
      std::make_shared<Gateway>(), mcpexec::UniqueFd(pair[0]),
      std::chrono::steady_clock::now() + std::chrono::seconds(10), limits, &metrics, pool);
  // The run's I/O loop, as Executor::PumpUntilEnded runs it.
  mcpexec::UniqueFd loop_stop(eventfd(0, EFD_CLOEXEC));
  std::thread loop([&] {
    for (;;) {
      pollfd p[2] = {{channel->fd(), POLLIN, 0}, {loop_stop.get(), POLLIN, 0}};
      if (poll(p, 2, -1) < 0 && errno != EINTR) return;
      if (p[1].revents) return;
      if (p[0].revents) channel->OnReadable();
    }
  });
  // The run writes everything, then closes its writing side.
  std::thread writer([&] {
    size_t done = 0;
    while (done < size) {
      ssize_t n = send(run.get(), data + done, size - done, MSG_NOSIGNAL);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    shutdown(run.get(), SHUT_WR);
  });
  std::string got;
  char buf[65536];
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  for (;;) {
    pollfd p{run.get(), POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) {
      if (std::chrono::steady_clock::now() > until) Fail("the channel neither answered nor ended");
      continue;
    }
    ssize_t n = read(run.get(), buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  writer.join();
  uint64_t one = 1;
  if (write(loop_stop.get(), &one, sizeof one) != sizeof one) Fail("eventfd");
  loop.join();
  channel->Stop();
  channel.reset();
  if (!pool.WaitIdle(std::chrono::seconds(15))) Fail("a thread outlived it");
  // Every answer: a whole frame, bounded, an object with id and ok.
  size_t at = 0;
  while (got.size() - at >= 4) {
    const auto* h = reinterpret_cast<const unsigned char*>(got.data() + at);
    const uint32_t n = h[0] | (h[1] << 8) | (h[2] << 16) | (uint32_t{h[3]} << 24);
    if (n > static_cast<uint32_t>(mcpexec::ToolChannel::MaxRequestBytes(limits)) * 2) {
      Fail("an answer past the bound");
    }
    if (got.size() - at - 4 < n) Fail("an answer cut short");
    auto parsed = mcpexec::bounded_json::Parse(std::string_view(got).substr(at + 4, n));
    if (!parsed.ok() || !parsed.value.is_object() || !parsed.value.contains("id") ||
        !parsed.value.contains("ok")) {
      Fail("an answer that is not a frame", got.substr(at + 4, n));
    }
    at += 4 + n;
  }
  if (at != got.size()) Fail("trailing bytes after the last answer");
  const std::string text = metrics.Render({});
  if (text.find("upstream=\"tiny\"") == std::string::npos) Fail("metrics lost the upstream");
  return 0;
}
