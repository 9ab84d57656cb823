#include "base/metrics.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "supervisor/run.h"

namespace mcpexec {
namespace {

TEST(MetricsTest, EveryRunOutcomeIsRendered) {
  Metrics m;
  for (const char* o : {"cpu", "file_size", "shutdown", "cpu"}) m.RecordRun(o, 0.1, 0);
  std::string text = m.Render({});
  EXPECT_NE(text.find("mcp_exec_runs_total{outcome=\"cpu\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("mcp_exec_runs_total{outcome=\"file_size\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_runs_total{outcome=\"shutdown\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_runs_total{outcome=\"ok\"} 0\n"), std::string::npos);
}

// Issue 20, point 2: one label per cause. The metric shows exactly the
// outcomes a run can end with and the causes a call can fail for, each its
// own (a failure that shares a run end's name, cancelled or shutdown, is the
// same cause met before the run started).
TEST(MetricsTest, TheOutcomesAreTheRunEndsAndTheFailureCauses) {
  std::set<std::string> want = {"ok", "error"};
  for (RunEnd e : AbnormalRunEnds()) want.insert(RunEndName(e));
  std::set<std::string> causes;
  for (RunFailure f : RunFailures()) {
    EXPECT_TRUE(causes.insert(RunFailureName(f)).second) << RunFailureName(f);
    want.insert(RunFailureName(f));
  }
  std::set<std::string> have(Metrics::kRunOutcomes.begin(), Metrics::kRunOutcomes.end());
  EXPECT_EQ(have.size(), Metrics::kRunOutcomes.size()) << "a label listed twice";
  EXPECT_EQ(have, want);
  Metrics m;
  m.RecordFailure(RunFailureName(RunFailure::kLockdownRefused));
  EXPECT_NE(m.Render({}).find("mcp_exec_runs_total{outcome=\"lockdown_refused\"} 1\n"),
            std::string::npos);
}

TEST(MetricsTest, HttpRefusalsAreCountedByStatus) {
  Metrics m;
  m.RecordHttpRefused(401);
  m.RecordHttpRefused(401);
  m.RecordHttpRefused(413);
  m.RecordHttpRefused(418);
  std::string text = m.Render({});
  EXPECT_NE(text.find("mcp_exec_http_refused_total{status=\"418\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("mcp_exec_http_refused_total{status=\"408\"} 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("mcp_exec_http_refused_total{status=\"401\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("mcp_exec_http_refused_total{status=\"413\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_http_refused_total{status=\"403\"} 0\n"), std::string::npos);
}

TEST(MetricsTest, SessionEvictionsAndRefusalsAreCountedByTable) {
  Metrics m;
  m.RecordSessionEviction("python");
  m.RecordSessionEviction("python");
  m.RecordSessionRefusal("mcp");
  std::string text = m.Render({});
  EXPECT_NE(text.find("mcp_exec_session_evictions_total{table=\"python\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("mcp_exec_session_evictions_total{table=\"mcp\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_session_refusals_total{table=\"mcp\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("mcp_exec_session_refusals_total{table=\"python\"} 0\n"), std::string::npos);
}

TEST(MetricsTest, ToolCallsAreCountedByUpstreamAndOutcome) {
  Metrics m;
  EXPECT_EQ(m.Render({}).find("mcp_exec_tool_calls_total"), std::string::npos)
      << "no upstreams, no code-mode series";
  m.DeclareUpstreams({"files", "web"});
  m.RecordToolCall("files", "ok", 0.003);
  m.RecordToolCall("files", "ok", 0.2);
  m.RecordToolCall("files", "tool_error", 0.01);
  std::string text = m.Render({});
  EXPECT_NE(text.find("mcp_exec_tool_calls_total{upstream=\"files\",outcome=\"ok\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("mcp_exec_tool_calls_total{upstream=\"files\",outcome=\"tool_error\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("mcp_exec_tool_calls_total{upstream=\"web\",outcome=\"refused\"} 0\n"),
            std::string::npos);
  EXPECT_NE(
      text.find("mcp_exec_tool_call_duration_seconds_bucket{upstream=\"files\",le=\"0.005\"} 1\n"),
      std::string::npos);
  EXPECT_NE(text.find("mcp_exec_tool_call_duration_seconds_count{upstream=\"files\"} 3\n"),
            std::string::npos);
}

}  // namespace
}  // namespace mcpexec
