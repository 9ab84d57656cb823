// The configuration parser: the input is an environment and a command line,
// one item a line: NAME=VALUE lines until a line "--", then one argument a
// line (a NUL ends an item, as it would in a real environ or argv). Parsed
// by the real ParseConfig. Checked: exactly one outcome; an error names a
// variable or a flag; an accepted configuration keeps every value in its
// documented range, and what the server derives from it at start (the
// listen address, the request cap, the limits of the runs' results, the
// tool's description) holds.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "base/text.h"
#include "model/config.h"
#include "supervisor/results.h"
#include "tool/contract.h"
#include "transport/http_policy.h"

namespace {

using mcpexec::Config;

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz_config: %s\n", what);
  abort();
}

void InRange(int64_t v, int64_t lo, int64_t hi, const char* name) {
  if (v < lo || v > hi) {
    fprintf(stderr, "fuzz_config: %s = %lld outside [%lld, %lld]\n", name,
            static_cast<long long>(v), static_cast<long long>(lo), static_cast<long long>(hi));
    abort();
  }
}

constexpr int64_t kMiB = int64_t{1024} * 1024;

void CheckConfig(const Config& c) {
  InRange(c.default_timeout_s, 1, 86400, "default_timeout_s");
  InRange(c.max_timeout_s, 1, 86400, "max_timeout_s");
  InRange(c.max_output_bytes, 0, 256 * kMiB, "max_output_bytes");
  InRange(c.max_stdin_bytes, 0, 256 * kMiB, "max_stdin_bytes");
  InRange(c.max_concurrent, 1, 1024 * 1024, "max_concurrent");
  InRange(c.max_queue, 0, 100000, "max_queue");
  InRange(c.max_code_bytes, 1, 64 * kMiB, "max_code_bytes");
  InRange(c.memory_limit_mb, 16, kMiB, "memory_limit_mb");
  InRange(c.disk_limit_mb, 1, kMiB, "disk_limit_mb");
  InRange(c.tail_bytes, 0, kMiB, "tail_bytes");
  InRange(c.max_images, 0, 100, "max_images");
  InRange(c.max_image_bytes, 1024, 16 * kMiB, "max_image_bytes");
  InRange(c.max_out_files, 0, 1000, "max_out_files");
  InRange(c.max_out_bytes, 0, 256 * kMiB, "max_out_bytes");
  InRange(c.max_result_bytes, 0, 16 * kMiB, "max_result_bytes");
  InRange(c.max_in_files, 0, 10000, "max_in_files");
  InRange(c.max_in_bytes, 0, 256 * kMiB, "max_in_bytes");
  InRange(c.max_sessions, 1, 100000, "max_sessions");
  InRange(c.max_streams, 1, 10000, "max_streams");
  InRange(c.max_py_sessions, 1, 10000, "max_py_sessions");
  InRange(c.py_session_idle_s, 1, 86400 * 7, "py_session_idle_s");
  InRange(c.py_session_max_s, 10, 86400 * 7, "py_session_max_s");
  InRange(c.zygote_huge_pages, 0, 1, "zygote_huge_pages");
  InRange(c.spare_prefault, 0, 2, "spare_prefault");
  if (c.workdir_root.empty() || c.workdir_root[0] != '/') Fail("workdir_root is not absolute");
  if (c.python.empty()) Fail("python is empty");
  if (c.log_level != "debug" && c.log_level != "info" && c.log_level != "warn" &&
      c.log_level != "error") {
    Fail("log_level is not a level");
  }
  for (const std::string& module : mcpexec::SplitComma(c.preload)) {
    if (module.find_first_of(" ,") != std::string::npos) Fail("preload holds a bad module name");
  }
  // What the server derives at start.
  InRange(mcpexec::EffectiveMaxRequestBytes(c), 1024, int64_t{1} << 40, "max request bytes");
  const mcpexec::http_policy::Listen listen = mcpexec::http_policy::ParseAddr(c.addr);
  InRange(listen.port, 0, 65535, "port");
  InRange(mcpexec::ResultLimitsFor(c).KeepBytes(), 0, int64_t{1} << 40, "results kept");
  (void)mcpexec::ExecDescription(c, mcpexec::RuntimeReport{}, "");
}

std::string Item(const std::string& line) { return line.substr(0, line.find('\0')); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> environ_items, args;
  bool in_args = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = Item(text.substr(start, end - start));
    start = end + 1;
    if (!in_args && line == "--") {
      in_args = true;
    } else {
      (in_args ? args : environ_items).push_back(line);
    }
  }
  // As main() reads them: environ through EnvironmentMap, argv without argv[0].
  std::vector<char*> envp;
  for (std::string& item : environ_items) envp.push_back(item.data());
  envp.push_back(nullptr);
  const std::map<std::string, std::string> env = mcpexec::EnvironmentMap(envp.data());
  const mcpexec::ParseResult r = mcpexec::ParseConfig(env, args);
  const int outcomes = r.config.has_value() + !r.error.empty() + !r.print_and_exit.empty();
  if (outcomes != 1) Fail("not exactly one outcome");
  if (!r.error.empty() && r.error.find("MCP_EXEC_") == std::string::npos &&
      r.error.find("--") == std::string::npos && r.error.find("argument") == std::string::npos) {
    Fail("an error that names no variable or flag");
  }
  if (r.config) CheckConfig(*r.config);
  return 0;
}
