// The exec tool's arguments: the input is the JSON text of a tools/call's
// `arguments` (as the session parses it), checked by the real
// ValidateExecArguments under the default limits and under small ones
// (every cap within an input's reach). Checked: an accepted request keeps
// to every rule of the contract (code, stdin, timeout_s, files, session,
// reset) and survives the run bundle the zygote decodes; a refusal is a
// message that serializes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <variant>

#include "base/fs_util.h"
#include "ipc/run_bundle.h"
#include "model/config.h"
#include "tool/contract.h"

namespace {

using json = nlohmann::json;
using mcpexec::Config;
using mcpexec::ExecRequest;

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz_exec_args: %s\n", what);
  abort();
}

Config SmallLimits() {
  Config c;
  c.default_timeout_s = 7;
  c.max_timeout_s = 60;
  c.max_code_bytes = 512;
  c.max_stdin_bytes = 256;
  c.max_in_files = 3;
  c.max_in_bytes = 300;
  return c;
}

void CheckAccepted(const json& args, const ExecRequest& req, const Config& c) {
  if (!args.is_object() || !args.contains("code") || !args["code"].is_string()) {
    Fail("accepted without code");
  }
  // The code runs as sent, less one leading byte-order mark (python3 skips
  // it in a file). A lone mark is not whitespace, so it is accepted (as the
  // Go server does) and runs as empty code; anything else leaves code.
  std::string sent = args["code"].get<std::string>();
  const bool bom = sent.rfind("\xEF\xBB\xBF", 0) == 0;
  if (bom) sent.erase(0, 3);
  if (req.code != sent) Fail("the code is not the code sent");
  if ((req.code.empty() && !bom) || static_cast<int64_t>(req.code.size()) > c.max_code_bytes) {
    Fail("code outside its limit");
  }
  if (static_cast<int64_t>(req.stdin_data.size()) > c.max_stdin_bytes) Fail("stdin too long");
  if (req.timeout_s < 1 || req.timeout_s > c.max_timeout_s) Fail("timeout_s not clamped");
  if (static_cast<int64_t>(req.files.size()) > c.max_in_files) Fail("too many files");
  int64_t total = 0;
  std::set<std::string> paths;
  for (const auto& [path, content] : req.files) {
    if (mcpexec::RelativePathProblem(path)) Fail("a file path leaves the working directory");
    if (!paths.insert(path).second) Fail("a file path twice");
    total += static_cast<int64_t>(content.size());
  }
  for (const std::string& path : paths) {
    for (size_t slash = path.find('/'); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      if (paths.count(path.substr(0, slash))) Fail("a file is also a folder");
    }
  }
  if (total > c.max_in_bytes) Fail("files past their byte limit");
  if (!req.session.empty() && !mcpexec::IsValidSessionName(req.session)) Fail("bad session name");
  if (req.reset && req.session.empty()) Fail("reset without a session");
  // What the executor hands the zygote, decoded as the zygote does.
  std::string code;
  std::vector<std::pair<std::string, std::string>> files;
  if (!mcpexec::ipc::DecodeRunBundle(mcpexec::ipc::EncodeRunBundle(req.code, req.files), &code,
                                     &files) ||
      code != req.code || files != req.files) {
    Fail("the run bundle does not round-trip");
  }
}

void Validate(const json& args, const Config& c) {
  auto validated = mcpexec::ValidateExecArguments(args, c);
  if (auto* req = std::get_if<ExecRequest>(&validated)) return CheckAccepted(args, *req, c);
  const std::string& message = std::get<std::string>(validated);
  if (message.empty()) Fail("an empty refusal");
  // The refusal is a tool error's text: it must serialize as it is.
  (void)mcpexec::ToolError(message).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const json args = json::parse(data, data + size, nullptr, false);
  if (args.is_discarded()) return -1;  // never a tool's arguments: not kept in the corpus
  static const Config kDefault;
  static const Config kSmall = SmallLimits();
  Validate(args, kDefault);
  Validate(args, kSmall);
  return 0;
}
