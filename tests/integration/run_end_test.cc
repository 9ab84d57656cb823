// Issue 39: a one-shot run's phase trace in its log line.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "server_process.h"

namespace mcpexec::testing {
namespace {

// The run line of run_id, once the server wrote it (after the run's teardown).
json RunLine(ServerProcess& s, int64_t run_id) {
  json found;
  WaitUntil(
      [&] {
        std::istringstream in(s.Stderr());
        for (std::string line; std::getline(in, line);) {
          json j = json::parse(line, nullptr, false);
          if (j.is_object() && j.value("event", "") == "run" &&
              j.value("run_id", int64_t{-1}) == run_id) {
            found = j;
            return true;
          }
        }
        return false;
      },
      10000);
  return found;
}

TEST(RunEndTest, TheRunLineTracesEveryPhaseInOrder) {
  ServerProcess s;
  s.Initialize();
  json r = s.Exec("print(1)");
  ASSERT_EQ(r["stdout"], "1\n") << r.dump();
  json line = RunLine(s, 1);
  ASSERT_TRUE(line.contains("trace_us")) << s.Stderr();
  const json& t = line["trace_us"];
  for (const char* phase : {"handed", "code_started", "code_finished", "drained", "status_known",
                            "answered", "torn_down"}) {
    ASSERT_TRUE(t.contains(phase) && t[phase].is_number_integer()) << phase << ": " << line;
    EXPECT_GE(t[phase].get<int64_t>(), 0) << phase << ": " << line;
  }
  EXPECT_LE(t["handed"], t["code_started"]) << line;
  EXPECT_LE(t["code_started"], t["code_finished"]) << line;
  EXPECT_LE(t["code_finished"], t["drained"]) << line;
  EXPECT_LE(t["drained"], t["answered"]) << line;
  EXPECT_LE(t["status_known"], t["answered"]) << line;
  EXPECT_GE(t["torn_down"], t["status_known"]) << line;
  EXPECT_GT(line["minor_faults"]["before_code"].get<int64_t>(), 0) << line;
  EXPECT_GE(line["minor_faults"]["during_code"].get<int64_t>(), 0) << line;
}

}  // namespace
}  // namespace mcpexec::testing
