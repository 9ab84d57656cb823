// Issue 39: a one-shot run's phase trace in its log line, and the answer
// before the teardown (the runner's memory held past its exit by a holder of
// the run's own, so that its status comes at once; the holder dies with the
// run, after the answer). The holder is the run's: the code may kill or
// stop it, and the call still ends as it should.
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

// 300 MB written by the run: its teardown is no longer on the call's path,
// and the run line says when it ended.
TEST(RunEndTest, ALargeRunIsAnsweredBeforeItsMemoryIsFreed) {
  ServerProcess s;
  s.Initialize();
  json r = s.Exec(
      "b = bytearray(300 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
      "print(len(b))");
  ASSERT_EQ(r["stdout"], "314572800\n") << r.dump();
  json line = RunLine(s, 1);
  ASSERT_TRUE(line.contains("trace_us")) << s.Stderr();
  EXPECT_GE(line["trace_us"]["torn_down"], line["trace_us"]["answered"]) << line;
}

// The holder is a process of the run like any other: the code can end or
// stop it, and the call ends as it would have. It is no child of the code's:
// a wait() for any child finds none.
TEST(RunEndTest, ARunThatKillsOrStopsItsHolderEndsAsUsual) {
  ServerProcess s;
  s.Initialize();
  json probe = s.Exec("import os\nprint(os.getpid(), os.getppid())");
  if (probe["stdout"] != "2 1\n") GTEST_SKIP() << "runs have no pid namespace here: no holder";
  const std::string find =
      "import os, signal\n"
      "try:\n"
      "    os.wait()\n"
      "except ChildProcessError:\n"
      "    pass\n"
      "holders = []\n"
      "for p in os.listdir('/proc'):\n"
      "    if p.isdigit():\n"
      "        name, rest = open(f'/proc/{p}/stat').read().rsplit(')', 1)\n"
      "        if name.endswith('(mcp-exec-holder') and rest.split()[1] == '1':\n"
      "            holders.append(int(p))\n";
  for (const char* sig : {"SIGKILL", "SIGSTOP"}) {
    json r = s.Exec(find + "for h in holders: os.kill(h, signal." + sig + ")\nprint(len(holders))",
                    {{"timeout_s", 20}});
    EXPECT_EQ(r["exit_code"], 0) << sig << ": " << r.dump();
    EXPECT_EQ(r["stdout"], "1\n") << sig << ": the run has one holder: " << r.dump();
    EXPECT_EQ(r["timed_out"], false) << sig << ": " << r.dump();
    EXPECT_LT(r["duration_ms"].get<int64_t>(), 10000) << sig << ": " << r.dump();
  }
}

}  // namespace
}  // namespace mcpexec::testing
