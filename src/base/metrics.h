// Counters for /metrics, in the Prometheus text format. Runs are recorded by
// the executor; gauges are read when scraped.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

namespace mcpexec {

class Metrics {
 public:
  // A run that ended, by outcome: ok, error (non-zero exit), or the
  // reason it was ended (timeout, memory, ...; RunEndName).
  void RecordRun(const std::string& outcome, double duration_s, double queue_s);
  // A call answered with a tool error, by cause (RunFailureName:
  // at_capacity, sandbox_lost, ...): counted, not timed.
  void RecordFailure(const std::string& cause);
  // Every outcome mcp_exec_runs_total shows (0 until counted).
  static const std::vector<const char*> kRunOutcomes;
  // An HTTP request answered with an error status before it reached MCP
  // (401 auth, 403 Host/Origin, 413 too large, 431 headers, 429 too many
  // connections, ...).
  void RecordHttpRefused(int status);
  // Python sessions (the exec tool's `session`): one started, one ended
  // (reason: one of kPySessionEndReasons).
  void RecordPySessionStart();
  void RecordPySessionEnd(const std::string& reason);
  static const std::array<const char*, 8> kPySessionEndReasons;
  // A full session table ("mcp": MCP sessions over http/sse; "python": the
  // exec tool's sessions) that made room by ending its least recently used
  // idle session, or refused a newcomer because none was idle.
  void RecordSessionEviction(const std::string& table);
  void RecordSessionRefusal(const std::string& table);
  // A run's nested call to an upstream's tool (code mode), by upstream and
  // outcome: ok, tool_error (the tool said isError), refused (not allowed,
  // bad arguments, past a bound), failed (the upstream did not answer),
  // too_large (past MCP_EXEC_MAX_TOOL_RESULT_BYTES).
  // An upstream name that was not declared (a run may send any) is counted
  // as "unknown": labels come only from the configuration.
  void RecordToolCall(const std::string& upstream, const std::string& outcome, double duration_s);
  // Upstreams known at start: their counters show from the first scrape.
  void DeclareUpstreams(const std::vector<std::string>& names);
  // A frame of a run's tool channel refused before it was a call, by why
  // (one of kToolFrameRefusals: oversized, malformed, too deep, or past the
  // channel's budget).
  void RecordToolFrameRefused(const std::string& why);
  static const std::array<const char*, 4> kToolFrameRefusals;
  // A label's value as the text format writes it: \, " and newline escaped.
  static std::string EscapeLabel(const std::string& value);
  static const std::array<const char*, 5> kToolCallOutcomes;

  struct Gauges {
    int64_t in_flight = 0, queued = 0, zygote_restarts = 0, sessions = 0, streams = 0;
    int64_t py_sessions = 0;
    int64_t tasks = 0;  // held: working, or ended and kept
  };
  std::string Render(const Gauges& g) const;

 private:
  void RenderToolCalls(std::ostream& o) const;  // with mu_ held
  static constexpr std::array<double, 12> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                      0.5,   1,    2.5,   5,    10,  30};
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> counts{};
    uint64_t count = 0;
    double sum = 0;
    void Observe(double v);
  };
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> runs_;
  std::map<int, uint64_t> http_refused_;
  uint64_t py_session_starts_ = 0;
  std::map<std::string, uint64_t> py_session_ends_;
  std::map<std::string, uint64_t> session_evictions_, session_refusals_;
  std::map<std::pair<std::string, std::string>, uint64_t> tool_calls_;  // (upstream, outcome)
  std::map<std::string, Histogram> tool_call_duration_;  // declared upstreams and "unknown"
  std::map<std::string, uint64_t> tool_frames_refused_;
  Histogram duration_, queue_;
};

}  // namespace mcpexec
