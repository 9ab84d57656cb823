#include "base/metrics.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mcpexec
