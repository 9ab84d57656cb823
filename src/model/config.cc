#include "model/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sstream>
#include <vector>

#include "base/python_env.h"
#include "base/resources.h"
#include "base/version.h"
#include "model/config_options.h"

namespace mcpexec {

using config_internal::kMiB;
using config_internal::Option;
using config_internal::Options;

RunLimits RunLimitsOf(const Config& c) {
  RunLimits l;
  l.memory_bytes = c.memory_limit_mb << 20;
  l.disk_bytes = c.disk_limit_mb << 20;
  l.max_processes = c.max_processes;
  l.max_open_files = c.max_open_files;
  l.sandbox_uid = static_cast<uint32_t>(c.sandbox_uid);
  l.sandbox_gid = static_cast<uint32_t>(c.sandbox_uid);
  return l;
}

int64_t DefaultMaxPySessions(int64_t memory_mb, int64_t memory_limit_mb) {
  // Each session may grow to its memory limit and keeps it between calls:
  // half the memory divided among them.
  return std::clamp<int64_t>(memory_mb / 2 / std::max<int64_t>(memory_limit_mb, 1), 2, 64);
}

int64_t DefaultMaxProcesses(int64_t memory_mb) {
  return std::clamp<int64_t>(memory_mb / 4, 16, Config{}.max_processes);
}

int64_t DefaultMemoryLimitMb(int64_t memory_mb) {
  return std::clamp<int64_t>(memory_mb * 3 / 8, 16, Config{}.memory_limit_mb);
}

int64_t DefaultDiskLimitMb(int64_t memory_mb) {
  return std::clamp<int64_t>(memory_mb / 4, 1, Config{}.disk_limit_mb);
}

std::string TransportName(Transport t) {
  switch (t) {
    case Transport::kStdio:
      return "stdio";
    case Transport::kHttp:
      return "http";
    case Transport::kSse:
      return "sse";
  }
  return "?";
}

int64_t EffectiveMaxRequestBytes(const Config& c) {
  if (c.max_request_bytes > 0) return c.max_request_bytes;
  // Input files count too: base64 grows them by 4/3, escaping by up to 6.
  return 6 * (c.max_code_bytes + c.max_stdin_bytes + c.max_in_bytes) + int64_t{64} * 1024;
}

std::map<std::string, std::string> EnvironmentMap(char** envp) {
  std::map<std::string, std::string> env;
  for (char** e = envp; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::vector<OptionDoc> OptionDocs() {
  std::vector<OptionDoc> docs;
  for (const Option& o : Options()) docs.push_back({o.env, o.flag, o.default_text, o.unit, o.help});
  return docs;
}

std::string HelpText() {
  std::ostringstream o;
  o << "mcp-exec " << MCP_EXEC_VERSION
    << ": an MCP server whose one tool, exec, runs Python in a locked-down sandbox.\n\n"
       "Usage:\n"
       "  mcp-exec [FLAGS]          serve MCP (stdio by default)\n"
       "  mcp-exec doctor [--json]  show which isolation layers hold on this host\n"
       "  mcp-exec --help | --version (or -V, version)\n\n"
       "Every flag has an environment variable; a flag wins over its variable.\n"
       "A set but malformed value is an error (exit status 1), never a silent default.\n\n";
  for (const Option& opt : Options()) {
    o << "  " << opt.flag << "=VALUE\n      " << opt.env << "  (default: " << opt.default_text;
    if (*opt.unit) o << ", unit: " << opt.unit;
    o << ")\n      " << opt.help << "\n";
  }
  return o.str();
}

std::vector<std::string> CommaList(const std::string& csv) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= csv.size()) {
    size_t end = csv.find(',', start);
    if (end == std::string::npos) end = csv.size();
    std::string item = csv.substr(start, end - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    items.push_back(std::move(item));
    start = end + 1;
  }
  return items;
}

bool HasWildcardOrigin(const std::string& csv) {
  for (const std::string& item : CommaList(csv)) {
    if (item == "*") return true;
  }
  return false;
}

ParseResult ParseConfig(const std::map<std::string, std::string>& env,
                        const std::vector<std::string>& args) {
  return ParseConfig(env, args, ProcessResources());
}

namespace {

// The server's own binary, whose folder no mount may make writable.
std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Who set the derived values: a variable or flag, else their default from
// the resources, with the reason.
void NoteSetter(Config& c, const char* name, const std::string& setter) {
  const std::string n = name;
  if (n == "MCP_EXEC_MAX_CONCURRENT") c.max_concurrent_from = setter;
  if (n == "MCP_EXEC_MEMORY_LIMIT_MB") c.memory_limit_from = setter;
  if (n == "MCP_EXEC_DISK_LIMIT_MB") c.disk_limit_from = setter;
  if (n == "MCP_EXEC_MAX_PY_SESSIONS") c.max_py_sessions_from = setter;
  if (n == "MCP_EXEC_MAX_PROCESSES") c.max_processes_from = setter;
  if (n == "MCP_EXEC_MOUNTS") c.mounts_from = setter;
  if (n == "MCP_EXEC_RESOURCE_STORE_MB") c.resource_store_from = setter;
  if (n == "MCP_EXEC_MAX_TASKS") c.max_tasks_from = setter;
}

// "default: 3/8 of <where>" when the share of the memory is below the
// contract's default, else "default: <contract> MiB (<share> of <where> is more)".
std::string FromShare(int64_t value, int64_t contract, const char* share, const Resources& res) {
  return value < contract ? std::string("default: ") + share + " of " + res.memory_from
                          : "default: " + std::to_string(contract) + " MiB (" + share + " of " +
                                res.memory_from + " is more)";
}

void DeriveDefaults(Config& c, const Resources& res) {
  if (c.max_concurrent_from.empty()) {
    c.max_concurrent = std::clamp<int64_t>(res.cpus, 1, 1024);
    c.max_concurrent_from = "default: " + res.cpus_from;
  }
  if (c.memory_limit_from.empty()) {
    c.memory_limit_mb = DefaultMemoryLimitMb(res.memory_mb);
    c.memory_limit_from = FromShare(c.memory_limit_mb, Config{}.memory_limit_mb, "3/8", res);
  }
  if (c.disk_limit_from.empty()) {
    c.disk_limit_mb = DefaultDiskLimitMb(res.memory_mb);
    c.disk_limit_from = FromShare(c.disk_limit_mb, Config{}.disk_limit_mb, "a quarter", res);
  }
  if (c.max_processes_from.empty()) {
    c.max_processes = DefaultMaxProcesses(res.memory_mb);
    c.max_processes_from = c.max_processes < Config{}.max_processes
                               ? "default: one per 4 MiB of " + res.memory_from
                               : "default: " + std::to_string(Config{}.max_processes) +
                                     " (one per 4 MiB of " + res.memory_from + " is more)";
  }
  // Ended tasks keep small results in memory (big ones wait on disk): one
  // per 16 MiB of memory, 4 to 32.
  if (c.max_tasks_from.empty()) {
    c.max_tasks = std::clamp<int64_t>(res.memory_mb / 16, 4, Config{}.max_tasks);
    c.max_tasks_from = c.max_tasks < Config{}.max_tasks
                           ? "default: one per 16 MiB of " + res.memory_from
                           : "default: " + std::to_string(Config{}.max_tasks) +
                                 " (one per 16 MiB of " + res.memory_from + " is more)";
  }
  if (c.max_py_sessions_from.empty()) {
    c.max_py_sessions = DefaultMaxPySessions(res.memory_mb, c.memory_limit_mb);
    c.max_py_sessions_from = "default: half of " + res.memory_from + " / " +
                             std::to_string(c.memory_limit_mb) + " MiB per session, 2 to 64";
  }
}

// Settings that are each valid but cannot work together. "" or why.
std::string CrossCheck(const Config& c) {
  // `*` lets every web page's requests through the Origin guard: without a
  // token, any page the user opens could run code here.
  if (HasWildcardOrigin(c.allowed_origins) && c.auth_token.empty()) {
    return "MCP_EXEC_ALLOWED_ORIGINS (or --allowed-origins) holds \"*\", which lets any web page "
           "the user visits send requests; that needs MCP_EXEC_AUTH_TOKEN (or --auth-token) set "
           "too, "
           "or list the origins instead";
  }
  return "";
}

// Values the Go server starts with (it reads these four as any integer),
// applied as it applies them where this server can: one outside what this
// server takes becomes the nearest it does, a default timeout above the
// max is the max, and an output cap of 0 drops all output. Each leaves a
// warning (Config::warnings) that says what was used and why.
void ApplyCompatibleMeanings(Config& c) {
  struct Range {
    int64_t Config::*field;
    int64_t lo, hi;
    const char* name;
    const char* below;  // what the value means here when it was below lo
    const char* above;
  };
  static const Range kRanges[] = {
      {&Config::default_timeout_s, 1, 86400, "MCP_EXEC_DEFAULT_TIMEOUT_S",
       "calls without timeout_s get 1 s, as the Go server gives them",
       "calls without timeout_s never run past the max timeout"},
      {&Config::max_timeout_s, 1, 86400, "MCP_EXEC_MAX_TIMEOUT_S",
       "every run may take 1 s (the Go server would end every run at once)",
       "no run takes more than a day here"},
      {&Config::max_output_bytes, 0, 256 * kMiB, "MCP_EXEC_MAX_OUTPUT_BYTES", "0 drops all output",
       "output past it is cut (truncated: true)"},
      {&Config::max_stdin_bytes, 0, 256 * kMiB, "MCP_EXEC_MAX_STDIN_BYTES",
       "0 refuses a call with any stdin (the Go server refused every call)",
       "a call with more stdin is refused"},
  };
  for (const Range& r : kRanges) {
    const int64_t given = c.*r.field;
    const int64_t used = std::clamp(given, r.lo, r.hi);
    if (used == given) continue;
    c.warnings.push_back(std::string(r.name) + " is " + std::to_string(given) +
                         ", outside what this server takes (" + std::to_string(r.lo) + " to " +
                         std::to_string(r.hi) + "): it uses " + std::to_string(used) + "; " +
                         (given < r.lo ? r.below : r.above) +
                         ". Set a value in that range to silence this");
    c.*r.field = used;
  }
  if (c.default_timeout_s > c.max_timeout_s) {
    c.warnings.push_back("MCP_EXEC_DEFAULT_TIMEOUT_S (" + std::to_string(c.default_timeout_s) +
                         ") is above MCP_EXEC_MAX_TIMEOUT_S (" + std::to_string(c.max_timeout_s) +
                         "): calls without timeout_s get " + std::to_string(c.max_timeout_s) +
                         " s, the max; lower the default or raise the max to silence this");
    c.default_timeout_s = c.max_timeout_s;
  }
  if (c.max_output_bytes == 0) {
    c.warnings.push_back(
        "MCP_EXEC_MAX_OUTPUT_BYTES is 0: every run's stdout and stderr are dropped (truncated: "
        "true, stdout_tail and stderr_tail empty); set a cap of at least 1 byte to see output");
  }
}

// MCP_EXEC_PYTHON (the Go server's way to add packages): its default means
// nothing here; anything else lends its site-packages to the runs. "" or
// the start error.
std::string LendPythonSite(Config* config, const std::map<std::string, std::string>& env) {
  Config& c = *config;
  if (c.python == Config{}.python) return "";
  python_env::Found found;
  auto path = env.find("PATH");
  std::string why = python_env::Probe(c.python, path == env.end() ? "" : path->second, &found);
  if (why.empty()) why = python_env::Compatible(found, MCP_EXEC_PYTHON_VERSION);
  if (!why.empty()) return "MCP_EXEC_PYTHON (or --python) " + c.python + " " + why;
  for (const std::string& dir : found.site) {
    c.python_site.push_back(dir);
    // Runs see the system folders already; any other is shown read-only
    // at the same path.
    bool system = false;
    for (const char* sys_dir : {"/usr/", "/lib/", "/lib64/"}) {
      system = system || dir.rfind(sys_dir, 0) == 0;
    }
    if (!system) c.mounts.push_back({dir, dir, false, true});
  }
  return "";
}

// The resource store lives on the workdir root's filesystem, beside the
// runs' own files where runs have no tmpfs of their own (Docker's posture:
// a 64 MiB /tmp). Its default bound is a quarter of that filesystem (at
// most 1024 MiB), and it always leaves free what the runs may need: half
// the filesystem, at most MCP_EXEC_DISK_LIMIT_MB per concurrent run. One
// run's 55 MiB stdout had filled a 64 MiB /tmp for 15 minutes.
void ResourceStoreShare(Config& c) {
  struct statvfs fs {};
  const int64_t fs_mb = statvfs(c.workdir_root.c_str(), &fs) == 0
                            ? static_cast<int64_t>((fs.f_blocks * fs.f_frsize) >> 20)
                            : 0;
  c.resource_store_keep_free_mb = std::min(fs_mb / 2, c.disk_limit_mb * c.max_concurrent);
  if (!c.resource_store_from.empty() || fs_mb == 0) return;
  const int64_t quarter = fs_mb / 4;
  c.resource_store_mb = std::min<int64_t>(Config{}.resource_store_mb, quarter);
  c.resource_store_from = quarter < Config{}.resource_store_mb
                              ? "default: a quarter of " + c.workdir_root + "'s filesystem (" +
                                    std::to_string(fs_mb) + " MiB)"
                              : "default: " + std::to_string(Config{}.resource_store_mb) +
                                    " MiB (a quarter of " + c.workdir_root +
                                    "'s filesystem is more)";
}

// The server makes its directories inside the root, never the root itself
// (nor its parents: a typo would otherwise become a tree of folders).
std::string CheckWorkdirRoot(const std::string& root) {
  struct stat st;
  const bool exists = stat(root.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return "";
  return "MCP_EXEC_WORKDIR_ROOT (or --workdir-root) " + root +
         (exists ? " is not a directory" : std::string(" cannot be used: ") + strerror(errno)) +
         ": create it, or name a directory that exists (default " + Config{}.workdir_root + ")";
}

// Levenshtein's distance between a and b (one row at a time).
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// " (did you mean --x?)" for a mistyped flag: the flag it starts, the one
// that starts it, or the nearest by edit distance (at most 3 edits); an
// environment variable's name gets its flag. "" when nothing is close.
std::string Suggestion(const std::string& name) {
  std::string best;
  size_t best_d = 4;
  for (const Option& opt : Options()) {
    const std::string flag = opt.flag;
    if (name == opt.env) return std::string(" (did you mean ") + opt.flag + "=...?)";
    if (name.size() > 3 && (flag.rfind(name, 0) == 0 || name.rfind(flag, 0) == 0)) {
      return " (did you mean " + flag + "?)";
    }
    const size_t d = EditDistance(name, flag);
    if (d < best_d) best_d = d, best = flag;
  }
  return best.empty() ? "" : " (did you mean " + best + "?)";
}

// A warning for each MCP_EXEC_* variable that is no setting of this server
// (a typo is otherwise silently ignored): with the nearest setting's name,
// by edit distance (at most 4 edits) or by one name starting the other.
void WarnAboutUnknownVariables(const std::map<std::string, std::string>& env, Config* c) {
  for (const auto& entry : env) {
    const std::string& name = entry.first;  // a lambda below uses it (clang 14: no bindings)
    if (name.rfind("MCP_EXEC_", 0) != 0) continue;
    // What Docker links and Kubernetes service links set for a container or
    // Service named mcp-exec: not the operator's typos.
    if (name == "MCP_EXEC_PORT" || name.rfind("MCP_EXEC_PORT_", 0) == 0 ||
        name.rfind("MCP_EXEC_SERVICE_", 0) == 0 || name == "MCP_EXEC_NAME" ||
        name.rfind("MCP_EXEC_ENV_", 0) == 0) {
      continue;
    }
    const auto& options = Options();
    if (std::any_of(options.begin(), options.end(),
                    [&](const Option& o) { return name == o.env; })) {
      continue;
    }
    std::string best;
    size_t best_d = 5;
    for (const Option& opt : options) {
      const std::string known = opt.env;
      const size_t d =
          (known.rfind(name, 0) == 0 || name.rfind(known, 0) == 0) ? 1 : EditDistance(name, known);
      if (d < best_d) best_d = d, best = known;
    }
    c->warnings.push_back(name + " is not a setting of this server and is ignored" +
                          (best.empty() ? std::string(" (mcp-exec --help lists them)")
                                        : " (did you mean " + best + "?)"));
  }
}

// args[*i] as a flag (--name=value, or --name value: then *i moves on).
// "" or the error, with a suggestion for a name that is not a flag.
std::string ApplyFlag(Config* c, const std::vector<std::string>& args, size_t* i) {
  const std::string& a = args[*i];
  std::string name = a, value;
  bool has_value = false;
  auto eq = a.find('=');
  if (eq != std::string::npos) {
    name = a.substr(0, eq);
    value = a.substr(eq + 1);
    has_value = true;
  }
  const Option* match = nullptr;
  for (const Option& opt : Options()) {
    if (name == opt.flag) match = &opt;
  }
  if (!match) return "unknown argument \"" + a + "\"" + Suggestion(name) + " (see --help)";
  if (!has_value) {
    if (*i + 1 >= args.size()) return std::string(match->flag) + " needs a value";
    value = args[++*i];
  }
  std::string err = match->set(*c, value);
  if (!err.empty()) return std::string(match->flag) + " " + err + " (got \"" + value + "\")";
  NoteSetter(*c, match->env, match->flag);
  return "";
}

}  // namespace

ParseResult ParseConfig(const std::map<std::string, std::string>& env,
                        const std::vector<std::string>& args, const Resources& resources) {
  ParseResult r;
  Config c;
  for (const Option& opt : Options()) {
    auto it = env.find(opt.env);
    if (it == env.end()) continue;
    std::string err = opt.set(c, it->second);
    if (!err.empty()) {
      r.error = std::string(opt.env) + " " + err + " (got \"" + it->second + "\")";
      return r;
    }
    NoteSetter(c, opt.env, opt.env);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      r.print_and_exit = HelpText();
      return r;
    }
    if (a == "--version" || a == "-V" || (a == "version" && i == 0)) {
      r.print_and_exit = std::string("mcp-exec ") + MCP_EXEC_VERSION + "\n";
      return r;
    }
    if (a == "doctor" && i == 0) {
      r.command = "doctor";
      continue;
    }
    if (a == "--json" && r.command == "doctor") {
      r.json_output = true;
      continue;
    }
    if (std::string err = ApplyFlag(&c, args, &i); !err.empty()) {
      r.error = err;
      return r;
    }
  }
  DeriveDefaults(c, resources);
  ApplyCompatibleMeanings(c);
  WarnAboutUnknownVariables(env, &c);
  if (std::string err = CrossCheck(c); !err.empty()) {
    r.error = err;
    return r;
  }
  if (std::string err = LendPythonSite(&c, env); !err.empty()) {
    r.error = err;
    return r;
  }
  if (!c.mounts.empty()) {
    std::string err = mounts::Check(&c.mounts, c.workdir_root, SelfExe());
    if (!err.empty()) {
      r.error =
          (c.mounts_from.empty() ? std::string("MCP_EXEC_PYTHON's site-packages") : c.mounts_from) +
          " " + err;
      return r;
    }
    // Runs are sandbox_uid when the server starts as root, else the
    // server's own uid (whose access the kernel decides with its groups).
    for (const mounts::Mount& m : c.mounts) {
      struct stat st;
      if (geteuid() != 0 && stat(m.host.c_str(), &st) == 0) {
        const int need = R_OK | (S_ISDIR(st.st_mode) ? X_OK : 0) | (m.writable ? W_OK : 0);
        if (faccessat(AT_FDCWD, m.host.c_str(), need, AT_EACCESS) == 0) continue;
      }
      const unsigned uid = geteuid() == 0 ? static_cast<unsigned>(c.sandbox_uid) : geteuid();
      const unsigned gid = geteuid() == 0 ? static_cast<unsigned>(c.sandbox_uid) : getegid();
      if (std::string w = mounts::AccessWarning(m, uid, gid); !w.empty()) c.warnings.push_back(w);
    }
  }
  if (std::string err = CheckWorkdirRoot(c.workdir_root); !err.empty()) {
    r.error = err;
    return r;
  }
  ResourceStoreShare(c);
  r.config = c;
  return r;
}

}  // namespace mcpexec
