#include "upstream/upstreams.h"

#include <algorithm>
#include <mutex>

#include "base/log.h"
#include "upstream/schema.h"

namespace mcpexec::upstream {

struct Upstreams::Tool {
  std::string name;
  nlohmann::json listed = nullptr;         // as tools/list gave it
  std::unique_ptr<ArgumentSchema> schema;  // null: only "an object" is checked
};

using Tools = Upstreams::Tools;

struct Upstreams::Server {
  explicit Server(Spec s) : client(std::move(s)) {}
  Client client;
  // The allowed tools as last listed: replaced whole when the server said
  // its list changed, so a call holds the list it looked in.
  std::shared_ptr<const Tools> Snapshot() const {
    std::lock_guard<std::mutex> lock(mu);
    return tools;
  }
  void Replace(std::shared_ptr<const Tools> now, size_t listed_now) {
    std::lock_guard<std::mutex> lock(mu);
    tools = std::move(now);
    listed = listed_now;
  }
  size_t Listed() const {
    std::lock_guard<std::mutex> lock(mu);
    return listed;
  }
  // One thread lists a changed server again at a time; after a failure,
  // not again before retry_after (under refresh_mu).
  std::mutex refresh_mu;
  Clock::time_point retry_after{};

 private:
  mutable std::mutex mu;
  std::shared_ptr<const Tools> tools = std::make_shared<Tools>();
  size_t listed = 0;
};

Upstreams::Upstreams(std::vector<Spec> specs, Metrics* metrics) : metrics_(metrics) {
  for (Spec& s : specs) servers_.push_back(std::make_unique<Server>(std::move(s)));
}

Upstreams::~Upstreams() = default;

namespace {

std::string Describe(const Spec& s) { return s.stdio() ? "command " + s.command : "url " + s.url; }

}  // namespace

// The tools of a tools/list answer that the entry allows, their input
// schemas compiled.
std::shared_ptr<const Tools> Upstreams::AllowedTools(const Spec& spec,
                                                     const nlohmann::json& listed) {
  auto tools = std::make_shared<Tools>();
  for (const nlohmann::json& t : listed) {
    const std::string name = t["name"].get<std::string>();
    if (!Allowed(spec, name)) continue;
    Tool tool{};
    tool.name = name;
    tool.listed = t;
    std::string schema_why;
    std::vector<std::string> left_out;
    tool.schema = ArgumentSchema::Compile(t.value("inputSchema", nlohmann::json::object()),
                                          &schema_why, &left_out);
    if (!tool.schema) {
      log::Warn("upstream_schema", {{"upstream", spec.name},
                                    {"tool", name},
                                    {"why", "its input schema could not be compiled (" +
                                                schema_why + "); only its shape is checked"}});
    } else if (!left_out.empty()) {
      log::Info("upstream_schema",
                {{"upstream", spec.name}, {"tool", name}, {"left_to_upstream", left_out}});
    }
    tools->push_back(std::move(tool));
  }
  return tools;
}

// A server that said its tool list changed is listed again, before the
// catalog a run asks for is made (a run started after the change sees it).
// A run never waits for another's listing (it gets the list as it was), and
// a server that fails to list is asked again only after kRelistBackoff.
void Upstreams::RefreshChanged() {
  for (auto& server : servers_) {
    if (!server->client.ToolsChanged()) continue;
    std::unique_lock<std::mutex> refreshing(server->refresh_mu, std::try_to_lock);
    if (!refreshing.owns_lock() || Clock::now() < server->retry_after) continue;
    const Spec& spec = server->client.spec();
    std::string why;
    if (!server->client.Relist(Clock::now() + kRelistTimeout, &why)) {
      server->retry_after = Clock::now() + kRelistBackoff;
      log::Warn("upstream_tools_changed",
                {{"upstream", spec.name}, {"relisted", false}, {"why", why}});
      continue;
    }
    const nlohmann::json listed = server->client.tools();
    std::shared_ptr<const Tools> tools = AllowedTools(spec, listed);
    log::Info("upstream_tools_changed", {{"upstream", spec.name},
                                         {"relisted", true},
                                         {"tools_listed", listed.size()},
                                         {"tools_allowed", tools->size()}});
    server->Replace(std::move(tools), listed.size());
  }
}

bool Upstreams::Start(std::chrono::seconds timeout, std::string* error) {
  std::vector<std::string> names;
  for (auto& server : servers_) {
    const Spec& spec = server->client.spec();
    names.push_back(spec.name);
    std::string why;
    const auto t0 = Clock::now();
    if (!server->client.Start(t0 + timeout, &why)) {
      *error = "upstream '" + spec.name + "' (" + Describe(spec) + ") could not be started: " + why;
      return false;
    }
    const nlohmann::json listed = server->client.tools();
    server->Replace(AllowedTools(spec, listed), listed.size());
    for (const std::string& a : spec.allow) {
      const bool matched = std::any_of(listed.begin(), listed.end(), [&](const nlohmann::json& t) {
        Spec one;
        one.allow_all = false;
        one.allow = {a};
        return Allowed(one, t["name"].get<std::string>());
      });
      if (!matched) {
        *error = "upstream '" + spec.name + "': \"allow\" names '" + a +
                 "', which matches none of the tools it lists";
        return false;
      }
    }
    log::Info(
        "upstream_ready",
        {{"upstream", spec.name},
         {"transport", spec.stdio() ? "stdio" : "http"},
         {"protocol", server->client.era()},
         {"tools_listed", server->Listed()},
         {"tools_allowed", server->Snapshot()->size()},
         {"ms", std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()}});
  }
  if (metrics_) metrics_->DeclareUpstreams(names);
  return true;
}

nlohmann::json Upstreams::Catalog() {
  RefreshChanged();
  nlohmann::json out = nlohmann::json::object();
  for (const auto& server : servers_) {
    nlohmann::json tools = nlohmann::json::array();
    for (const Tool& t : *server->Snapshot()) {
      nlohmann::json tool = {
          {"name", t.name},
          {"description", t.listed.value("description", "")},
          {"inputSchema", t.listed.value("inputSchema", nlohmann::json::object())}};
      // What a call returns, for help(): the tool's own outputSchema.
      if (auto out = t.listed.find("outputSchema"); out != t.listed.end() && out->is_object()) {
        tool["outputSchema"] = *out;
      }
      tools.push_back(std::move(tool));
    }
    out[server->client.spec().name] = {{"tools", std::move(tools)}};
  }
  return out;
}

std::string Upstreams::Summary(int64_t max_tools) const {
  size_t total = 0;
  for (const auto& server : servers_) total += server->Snapshot()->size();
  const bool names = static_cast<int64_t>(total) <= max_tools;
  std::string out;
  for (const auto& server : servers_) {
    const std::shared_ptr<const Tools> tools = server->Snapshot();
    out += "\n- mcp_tools." + PythonName(server->client.spec().name) + " (" +
           std::to_string(tools->size()) + " tools)" + (names ? ":" : "");
    for (size_t i = 0; names && i < tools->size(); ++i) {
      out += (i ? ", " : " ") + PythonName((*tools)[i].name);
    }
  }
  if (!names) {
    out += "\n" + std::to_string(total) +
           " tools in all, more than this description lists: find the ones you need with "
           "print(mcp_tools.search('a few words')) (server, name and first line of each, best "
           "first), list a server's with print(mcp_tools.SERVER), then help(mcp_tools.SERVER.TOOL) "
           "for its signature.";
  }
  return out;
}

void Upstreams::Abort() {
  for (auto& server : servers_) server->client.Abort();
}

nlohmann::json Upstreams::Report() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& server : servers_) {
    const Spec& spec = server->client.spec();
    out.push_back({{"name", spec.name},
                   {"transport", spec.stdio() ? "stdio" : "http"},
                   {"protocol", server->client.era()},
                   {"tools_listed", server->Listed()},
                   {"tools_allowed", server->Snapshot()->size()}});
  }
  return out;
}

const Upstreams::Tool* Upstreams::Find(const Tools& tools, const std::string& tool) {
  for (const Tool& t : tools) {
    if (t.name == tool) return &t;
  }
  return nullptr;
}

nlohmann::json ValueOf(const nlohmann::json& r) {
  if (r.contains("structuredContent") && !r["structuredContent"].is_null()) {
    return r["structuredContent"];
  }
  const nlohmann::json content = r.value("content", nlohmann::json::array());
  if (!content.is_array()) return nlohmann::json::array();
  std::string text;
  bool only_text = !content.empty();
  for (const auto& item : content) {
    if (!item.is_object() || item.value("type", "") != "text" || !item["text"].is_string()) {
      only_text = false;
      break;
    }
    text += (text.empty() ? "" : "\n") + item["text"].get<std::string>();
  }
  if (only_text) return text;
  return content;
}

std::string ErrorTextOf(const nlohmann::json& r) {
  std::string text;
  for (const auto& item : r.value("content", nlohmann::json::array())) {
    if (item.is_object() && item.value("type", "") == "text" && item["text"].is_string()) {
      text += (text.empty() ? "" : "\n") + item["text"].get<std::string>();
    }
  }
  return text.empty() ? "the tool reported an error without a message" : text;
}

namespace {

// "" when the arguments fit the tool's input schema, else why not.
std::string ArgumentsError(const ArgumentSchema* schema, const std::string& server,
                           const std::string& tool, const nlohmann::json& arguments) {
  if (!schema) return "";
  const std::string why = schema->Check(arguments);
  if (why.empty()) return "";
  return "bad arguments for " + server + "." + tool + ": " + why + " (help(mcp_tools." +
         PythonName(server) + "." + PythonName(tool) + ") shows its schema)";
}

}  // namespace

ToolAnswer Upstreams::Call(const std::string& server_name, const std::string& tool_name,
                           const nlohmann::json& arguments, Clock::time_point deadline,
                           int64_t max_bytes) {
  const auto t0 = Clock::now();
  ToolAnswer a{};
  std::string outcome = "refused";
  Server* server = nullptr;
  for (auto& s : servers_) {
    if (s->client.spec().name == server_name) server = s.get();
  }
  // The tool list this call looks in (a change made later is the next
  // run's).
  const std::shared_ptr<const Tools> tools = server ? server->Snapshot() : nullptr;
  const Tool* tool = server ? Find(*tools, tool_name) : nullptr;
  auto finish = [&]() {
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    // A server no configuration names is counted as "unknown" (Metrics).
    if (metrics_) metrics_->RecordToolCall(server ? server_name : "unknown", outcome, s);
    log::Info("tool_call", {{"upstream", server ? server_name : std::string("(unknown)")},
                            {"tool", tool ? tool_name : "(refused)"},
                            {"duration_ms", static_cast<int64_t>(s * 1000)},
                            {"bytes", a.bytes},
                            {"ok", a.ok},
                            {"outcome", outcome}});
    return a;
  };
  if (!server) {
    std::string names;
    for (auto& s : servers_) names += (names.empty() ? "" : ", ") + s->client.spec().name;
    a.error = "there is no upstream named '" + server_name +
              "' (upstreams: " + (names.empty() ? "none" : names) + ")";
    return finish();
  }
  if (!tool) {
    const nlohmann::json all = server->client.tools();
    bool listed = std::any_of(all.begin(), all.end(),
                              [&](const nlohmann::json& t) { return t["name"] == tool_name; });
    a.error = listed ? "tool '" + tool_name + "' of upstream '" + server_name +
                           "' is not allowed here (its \"allow\" list leaves it out)"
                     : "upstream '" + server_name + "' has no tool '" + tool_name +
                           "' (print(mcp_tools." + PythonName(server_name) +
                           ") lists the ones you can call)";
    return finish();
  }
  if (!arguments.is_object()) {
    a.error = "the arguments of " + server_name + "." + tool_name + " must be an object (a dict)";
    return finish();
  }
  if (std::string why = ArgumentsError(tool->schema.get(), server_name, tool_name, arguments);
      !why.empty()) {
    a.error = why;
    return finish();
  }
  CallResult r = server->client.Call(tool_name, arguments, deadline);
  a.bytes = r.bytes;
  if (!r.ok) {
    outcome = "failed";
    a.error = "upstream '" + server_name + "' did not answer " + tool_name + ": " + r.error;
    return finish();
  }
  if (r.bytes > max_bytes) {
    outcome = "too_large";
    a.error = "the result of " + server_name + "." + tool_name + " has " + std::to_string(r.bytes) +
              " bytes, more than MCP_EXEC_MAX_TOOL_RESULT_BYTES (" + std::to_string(max_bytes) +
              "); ask it for less";
    return finish();
  }
  // An upstream that echoes a credential (in an error's text, say) does
  // not hand it to the run: each becomes "***" in every string of the
  // result (after the size check: a result past it is never walked).
  MaskStrings(&r.result, server->client.spec().Credentials());
  if (r.result.value("isError", false)) {
    outcome = "tool_error";
    a.error = ErrorTextOf(r.result);
    return finish();
  }
  outcome = "ok";
  a.ok = true;
  a.value = ValueOf(r.result);
  return finish();
}

}  // namespace mcpexec::upstream
