#include "base/metrics.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

namespace mcpexec {

namespace {
// The label of nested calls to a server no configuration names.
const std::string kUnknownUpstream = "unknown";
}  // namespace

void Metrics::Histogram::Observe(double v) {
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (v <= kBuckets[i]) ++counts[i];
  }
  ++count;
  sum += v;
}

void Metrics::RecordRun(const std::string& outcome, double duration_s, double queue_s) {
  std::lock_guard<std::mutex> lock(mu_);
  ++runs_[outcome];
  duration_.Observe(duration_s);
  queue_.Observe(queue_s);
}

const std::array<const char*, 8> Metrics::kPySessionEndReasons = {
    "reset",    "idle",    "lifetime",     "connection_closed", "interpreter_ended",
    "shutdown", "evicted", "ended_by_call"};

void Metrics::RecordPySessionStart() {
  std::lock_guard<std::mutex> lock(mu_);
  ++py_session_starts_;
}

void Metrics::RecordPySessionEnd(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++py_session_ends_[reason];
}

void Metrics::RecordFailure(const std::string& cause) {
  std::lock_guard<std::mutex> lock(mu_);
  ++runs_[cause];
}

const std::vector<const char*> Metrics::kRunOutcomes = {"ok",
                                                        "error",
                                                        "timeout",
                                                        "signal",
                                                        "cancelled",
                                                        "memory",
                                                        "cpu",
                                                        "file_size",
                                                        "seccomp",
                                                        "shutdown",
                                                        "processes",
                                                        "at_capacity",
                                                        "py_sessions_full",
                                                        "layers_missing",
                                                        "internal",
                                                        "sandbox_unavailable",
                                                        "start_failed",
                                                        "lockdown_refused",
                                                        "sandbox_lost",
                                                        "sandbox_stuck"};

namespace {
// A counter family over a fixed set of label values, each shown (0 until
// counted), so a dashboard sees every series from the start.
template <typename Keys>
void RenderCounters(std::ostream& o, const char* name, const char* help, const char* label,
                    const Keys& keys, const std::map<std::string, uint64_t>& counts) {
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n";
  for (const char* key : keys) {
    auto it = counts.find(key);
    o << name << "{" << label << "=\"" << key << "\"} " << (it == counts.end() ? 0 : it->second)
      << "\n";
  }
}

void RenderHistogram(std::ostringstream& o, const char* name, const char* help,
                     const std::array<double, 12>& buckets, const std::array<uint64_t, 12>& counts,
                     uint64_t count, double sum) {
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
  for (size_t i = 0; i < buckets.size(); ++i) {
    o << name << "_bucket{le=\"" << buckets[i] << "\"} " << counts[i] << "\n";
  }
  o << name << "_bucket{le=\"+Inf\"} " << count << "\n"
    << name << "_sum " << sum << "\n"
    << name << "_count " << count << "\n";
}
}  // namespace

std::string Metrics::Render(const Gauges& g) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream o;
  RenderCounters(o, "mcp_exec_runs_total",
                 "Calls by outcome: how a run ended, or why the call got a tool error.", "outcome",
                 kRunOutcomes, runs_);
  RenderHistogram(o, "mcp_exec_run_duration_seconds", "Wall time of runs, queue excluded.",
                  kBuckets, duration_.counts, duration_.count, duration_.sum);
  RenderHistogram(o, "mcp_exec_queue_wait_seconds", "Time runs waited for a slot.", kBuckets,
                  queue_.counts, queue_.count, queue_.sum);
  auto gauge = [&](const char* name, const char* help, int64_t v, const char* type = "gauge") {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
      << name << " " << v << "\n";
  };
  gauge("mcp_exec_runs_in_flight", "Runs executing now.", g.in_flight);
  gauge("mcp_exec_runs_queued", "Runs waiting for a slot.", g.queued);
  gauge("mcp_exec_zygote_restarts_total", "Times the sandbox zygote was restarted.",
        g.zygote_restarts, "counter");
  gauge("mcp_exec_sessions", "Open MCP sessions (http/sse).", g.sessions);
  gauge("mcp_exec_streams", "Open server-sent event streams.", g.streams);
  gauge("mcp_exec_py_sessions", "Live Python sessions (the exec tool's session argument).",
        g.py_sessions);
  gauge("mcp_exec_tasks",
        "Tasks held (io.modelcontextprotocol/tasks): running, or ended and kept for polling.",
        g.tasks);
  gauge("mcp_exec_py_session_starts_total", "Python sessions started.",
        static_cast<int64_t>(py_session_starts_), "counter");
  RenderCounters(o, "mcp_exec_py_session_ends_total", "Python sessions ended, by reason.", "reason",
                 kPySessionEndReasons, py_session_ends_);
  static constexpr std::array<const char*, 2> kTables = {"mcp", "python"};
  auto by_table = [&](const char* name, const char* help,
                      const std::map<std::string, uint64_t>& counts) {
    RenderCounters(o, name, help, "table", kTables, counts);
  };
  by_table("mcp_exec_session_evictions_total",
           "Idle sessions ended to make room in a full table (mcp: MCP sessions; python: the "
           "exec tool's sessions), least recently used first.",
           session_evictions_);
  by_table("mcp_exec_session_refusals_total",
           "New sessions refused because the table was full and none of its sessions was idle.",
           session_refusals_);
  RenderToolCalls(o);
  o << "# HELP mcp_exec_http_refused_total HTTP requests refused before they reached MCP, by "
       "status.\n# TYPE mcp_exec_http_refused_total counter\n";
  // The usual refusals always (a dashboard sees zeros), and any other
  // status that was recorded.
  std::map<int, uint64_t> statuses = http_refused_;
  for (int status : {400, 401, 403, 404, 405, 406, 408, 411, 413, 415, 429, 431, 501, 503}) {
    statuses.emplace(status, 0);
  }
  for (const auto& [status, count] : statuses) {
    o << "mcp_exec_http_refused_total{status=\"" << status << "\"} " << count << "\n";
  }
  return o.str();
}

void Metrics::RecordSessionEviction(const std::string& table) {
  std::lock_guard<std::mutex> lock(mu_);
  ++session_evictions_[table];
}

void Metrics::RecordSessionRefusal(const std::string& table) {
  std::lock_guard<std::mutex> lock(mu_);
  ++session_refusals_[table];
}

// Code mode's series, once there are upstreams (their names declared at
// start): calls by upstream and outcome, and their round trip.
void Metrics::RenderToolCalls(std::ostream& o) const {
  if (!tool_call_duration_.empty()) {
    o << "# HELP mcp_exec_tool_calls_total Nested calls runs made to upstream MCP servers' tools "
         "(code mode), by upstream and outcome.\n# TYPE mcp_exec_tool_calls_total counter\n";
    for (const auto& [upstream, h] : tool_call_duration_) {
      for (const char* outcome : kToolCallOutcomes) {
        auto it = tool_calls_.find({upstream, outcome});
        o << "mcp_exec_tool_calls_total{upstream=\"" << EscapeLabel(upstream) << "\",outcome=\""
          << outcome << "\"} " << (it == tool_calls_.end() ? 0 : it->second) << "\n";
      }
    }
    o << "# HELP mcp_exec_tool_call_duration_seconds Nested tool calls' round trip through "
         "mcp-exec, by upstream.\n# TYPE mcp_exec_tool_call_duration_seconds histogram\n";
    for (const auto& [upstream, h] : tool_call_duration_) {
      const std::string label = "upstream=\"" + EscapeLabel(upstream) + "\"";
      for (size_t i = 0; i < kBuckets.size(); ++i) {  // Observe counts cumulatively
        o << "mcp_exec_tool_call_duration_seconds_bucket{" << label << ",le=\"" << kBuckets[i]
          << "\"} " << h.counts[i] << "\n";
      }
      o << "mcp_exec_tool_call_duration_seconds_bucket{" << label << ",le=\"+Inf\"} " << h.count
        << "\nmcp_exec_tool_call_duration_seconds_sum{" << label << "} " << h.sum
        << "\nmcp_exec_tool_call_duration_seconds_count{" << label << "} " << h.count << "\n";
    }
    RenderCounters(o, "mcp_exec_tool_frames_refused_total",
                   "Frames of runs' tool channels refused before they were calls, by why.", "why",
                   kToolFrameRefusals, tool_frames_refused_);
  }
}

const std::array<const char*, 5> Metrics::kToolCallOutcomes = {"ok", "tool_error", "refused",
                                                               "failed", "too_large"};

void Metrics::RecordToolCall(const std::string& upstream, const std::string& outcome,
                             double duration_s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tool_call_duration_.empty()) return;  // no upstreams: no series
  const bool known = upstream != "unknown" && tool_call_duration_.count(upstream) > 0;
  const std::string& label = known ? upstream : kUnknownUpstream;
  const bool known_outcome = std::find(kToolCallOutcomes.begin(), kToolCallOutcomes.end(),
                                       outcome) != kToolCallOutcomes.end();
  ++tool_calls_[{label, known_outcome ? outcome : "refused"}];
  tool_call_duration_[label].Observe(duration_s);
}

void Metrics::DeclareUpstreams(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& n : names) tool_call_duration_[n];
  if (!names.empty()) tool_call_duration_[kUnknownUpstream];
}

const std::array<const char*, 4> Metrics::kToolFrameRefusals = {
    "oversized frame", "malformed frame", "too deep", "channel budget spent"};

void Metrics::RecordToolFrameRefused(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const char* known : kToolFrameRefusals) {
    if (why == known) ++tool_frames_refused_[known];
  }
}

std::string Metrics::EscapeLabel(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (const char ch : value) {
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch == '"') {
      out += "\\\"";
    } else if (ch == '\n') {
      out += "\\n";
    } else {
      out += ch;
    }
  }
  return out;
}

void Metrics::RecordHttpRefused(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_refused_[status];
}

}  // namespace mcpexec
