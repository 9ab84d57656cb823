// The exec tool's contract: an ExecResult as the call's result (structured
// content, text, resources).
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "base/base64.h"
#include "base/fs_util.h"
#include "base/utf8.h"
#include "model/run_limits.h"
#include "protocol/mcp_session.h"
#include "supervisor/results.h"
#include "tool/contract.h"

namespace mcpexec {

using json = nlohmann::json;

namespace {

// A stream as the answer carries it: valid UTF-8, and never more than twice
// the output cap once escaped. Control bytes escape six-fold, and the answer
// holds each stream twice (structuredContent and its JSON in the text item,
// escaped again): 1 MiB of them made 13 MB of answer. Past the bound the
// stream is cut (on a character boundary) and *tail gets its last 4 KiB.
// The bound is the cap's, not the stream's own size: a few bytes with a
// control character among them come back whole.
std::string AnswerText(const std::string& raw, int64_t cap, std::optional<std::string>* tail) {
  std::string text = RepairUtf8(raw);
  const size_t budget =
      2 * std::max<size_t>(text.size(), static_cast<size_t>(std::max<int64_t>(cap, 0)));
  size_t escaped = 0, keep = 0;
  for (; keep < text.size(); ++keep) {
    escaped += JsonEscapedBytes(static_cast<unsigned char>(text[keep]));
    if (escaped > budget) break;
  }
  if (keep == text.size()) return text;
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  *tail = std::string(Utf8Tail(text, 4096));
  text.resize(keep);
  return text;
}

}  // namespace

std::string TidyCrashReport(const std::string& text) {
  const size_t fatal = text.rfind("Fatal Python error: ");
  if (fatal == std::string::npos) return text;
  std::string out = text.substr(0, fatal);
  size_t at = fatal;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string_view line(text.data() + at, end - at);
    const bool runtime_frame = line.find("  File \"<mcp_exec_runtime>\"") == 0;
    const bool module_list = line.rfind("Extension modules: ", 0) == 0;
    if (!runtime_frame && !module_list) out.append(line);
    at = end;
  }
  return out;
}

json StructuredResult(const ExecResult& r) {
  std::optional<std::string> stdout_cut, stderr_cut;  // their tails, when cut
  json j = {
      {"stdout", AnswerText(r.stdout_data, r.output_cap, &stdout_cut)},
      {"stderr", AnswerText(r.signal ? TidyCrashReport(r.stderr_data) : r.stderr_data, r.output_cap,
                            &stderr_cut)},
      {"exit_code", r.exit_code},
      {"duration_ms", r.duration_ms},
      {"truncated", r.truncated},
      {"timed_out", r.timed_out},
      {"queue_ms", r.queue_ms},
  };
  if (r.signal) j["signal"] = r.signal;
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (!r.timeout_note.empty()) j["timeout_note"] = r.timeout_note;
  if (r.tool_calls >= 0) j["tool_calls"] = r.tool_calls;
  if (!r.session.empty()) {
    j["session"] = r.session;
    j["session_new"] = r.session_new;
    if (!r.session_ended.empty()) j["session_ended"] = r.session_ended;
    if (!r.session_restarted.empty()) j["session_restarted"] = r.session_restarted;
  }
  // A tail is the stream's last bytes (at most MCP_EXEC_TAIL_BYTES): kept
  // as they are, it is small whatever its escaping.
  if (r.stdout_lost) j["stdout_tail"] = RepairUtf8(r.stdout_tail);
  if (r.stderr_lost) {
    j["stderr_tail"] = RepairUtf8(r.signal ? TidyCrashReport(r.stderr_tail) : r.stderr_tail);
  }
  if (stdout_cut && !r.stdout_lost) j["stdout_tail"] = *stdout_cut;
  if (stderr_cut && !r.stderr_lost) j["stderr_tail"] = *stderr_cut;
  if (stdout_cut || stderr_cut) j["truncated"] = true;
  if (!r.stdout_uri.empty()) j["stdout_resource"] = r.stdout_uri;
  if (!r.stderr_uri.empty()) j["stderr_resource"] = r.stderr_uri;
  if (!r.stdout_not_kept.empty()) j["stdout_not_kept"] = r.stdout_not_kept;
  if (!r.stderr_not_kept.empty()) j["stderr_not_kept"] = r.stderr_not_kept;
  if (r.has_result) {
    j["result"] = RepairUtf8(r.result);
    if (r.result_truncated) j["result_truncated"] = true;
  }
  if (!r.images.empty() || r.images_omitted > 0) {
    j["images"] = r.images.size();
    j["images_omitted"] = r.images_omitted;
  }
  if (!r.files.empty() || r.files_omitted_count > 0) {
    json names = json::array();
    for (const RunArtifact& f : r.files) names.push_back(f.name);
    j["files"] = names;
    json omitted = json::array();
    for (const OmittedFile& f : r.files_omitted) {
      omitted.push_back({{"path", f.path}, {"bytes", f.bytes}, {"why", f.why}});
    }
    j["files_omitted"] = omitted;
    // The list names at most 100; the count is all of them.
    j["files_omitted_count"] = std::max<int64_t>(r.files_omitted_count, omitted.size());
  }
  return j;
}

std::string FileUri(const std::string& path) { return "file:///" + UriPathEscape(path); }

namespace {

// A stream as the text item shows it: whole while its escaped form fits in
// budget bytes, else its head and tail (about half the budget each, on
// character boundaries) around a line saying how much is left out; *note
// then says what is shown, of how many bytes, and where the whole is.
std::string TextOfStream(const std::string& key, const std::string& stream, size_t budget,
                         const json& structured, std::string* note) {
  size_t escaped = 0;
  for (unsigned char ch : stream) escaped += JsonEscapedBytes(ch);
  if (escaped <= budget) return stream;
  size_t head = 0, spent = 0;
  while (head < stream.size() && spent + JsonEscapedBytes(stream[head]) <= budget / 2) {
    spent += JsonEscapedBytes(static_cast<unsigned char>(stream[head++]));
  }
  while (head > 0 && head < stream.size() &&
         (static_cast<unsigned char>(stream[head]) & 0xC0) == 0x80) {
    --head;
  }
  size_t tail = stream.size();
  spent = 0;
  while (tail > head && spent + JsonEscapedBytes(stream[tail - 1]) <= budget - budget / 2) {
    spent += JsonEscapedBytes(static_cast<unsigned char>(stream[--tail]));
  }
  while (tail < stream.size() && (static_cast<unsigned char>(stream[tail]) & 0xC0) == 0x80) {
    ++tail;
  }
  const size_t left_out = tail - head;
  *note = "this text shows the first " + std::to_string(head) + " and the last " +
          std::to_string(stream.size() - tail) + " of the " + std::to_string(stream.size()) +
          " bytes of " + key + " (MCP_EXEC_TEXT_OUTPUT_BYTES=" + std::to_string(budget) +
          "); structuredContent." + key + " holds all " + std::to_string(stream.size());
  if (auto uri = structured.find(key + "_resource"); uri != structured.end()) {
    *note += ", and resources/read of " + uri->get<std::string>() +
             " the whole stream as the run wrote it";
  }
  return stream.substr(0, head) + "\n[... " + std::to_string(left_out) + " bytes of " + key +
         " left out of this text: see " + key + "_in_text ...]\n" + stream.substr(tail);
}

}  // namespace

// The text item, the one models read: structuredContent's JSON with the
// small fields first (the outcome, its flags, what else came back), then
// the tails, then the streams, each cut to its head and tail past
// text_budget (saying so in STREAM_in_text). Clients refuse (Claude Desktop
// past 1 MiB), file away (Claude Code past 50,000 characters) or cut (Codex
// at 10 KiB, from the end) long tool text: what they keep must hold the
// flags and both ends of the output, not the middle of stdout.
std::string ResultText(const json& structured, int64_t text_budget) {
  static const char* const kFirst[] = {"exit_code",
                                       "timed_out",
                                       "truncated",
                                       "reason",
                                       "signal",
                                       "duration_ms",
                                       "queue_ms",
                                       "tool_calls",
                                       "session",
                                       "session_new",
                                       "session_ended",
                                       "session_restarted",
                                       "images",
                                       "images_omitted",
                                       "files",
                                       "files_omitted",
                                       "files_omitted_count",
                                       "stdout_resource",
                                       "stderr_resource",
                                       "result",
                                       "result_truncated"};
  static const char* const kLast[] = {"stdout_tail", "stderr_tail", "stdout", "stderr"};
  nlohmann::ordered_json text;
  for (const char* key : kFirst) {
    if (auto it = structured.find(key); it != structured.end()) text[key] = *it;
  }
  for (const auto& [key, value] : structured.items()) {
    if (!text.contains(key) &&
        std::find(std::begin(kLast), std::end(kLast), key) == std::end(kLast)) {
      text[key] = value;  // a field this list does not know yet: among the small ones
    }
  }
  const size_t budget = static_cast<size_t>(std::max<int64_t>(text_budget, 0));
  std::map<std::string, std::string> shown;
  for (const char* key : {"stdout", "stderr"}) {
    auto it = structured.find(key);
    if (it == structured.end() || !it->is_string()) continue;
    std::string note;
    shown[key] = TextOfStream(key, it->get_ref<const std::string&>(), budget, structured, &note);
    if (!note.empty()) text[std::string(key) + "_in_text"] = note;
  }
  for (const char* key : kLast) {
    if (auto it = shown.find(key); it != shown.end()) {
      text[key] = std::move(it->second);
    } else if (auto it = structured.find(key); it != structured.end()) {
      text[key] = *it;
    }
  }
  return text.dump(-1, ' ', false, json::error_handler_t::replace);
}

json ToolResult(const ExecResult& r) {
  json structured = StructuredResult(r);
  json content =
      json::array({{{"type", "text"}, {"text", ResultText(structured, r.text_output_bytes)}}});
  for (const RunArtifact& img : r.images) {
    content.push_back(
        {{"type", "image"}, {"data", Base64Encode(img.data)}, {"mimeType", img.mime}});
  }
  // What the client fetches with resources/read: the whole streams, then
  // the files too big to embed (among the embedded ones, in order). A
  // resource past one part says how to read the rest.
  auto link = [&](const std::string& uri, const std::string& name, const std::string& mime,
                  int64_t size, std::string description) {
    const int64_t parts = ResourceParts(size);
    if (parts > 1) {
      description += "; resources/read gives it in " + std::to_string(parts) + " parts of " +
                     std::to_string(kResourcePartBytes) + " bytes: " + ResourcePartUri(uri, 1) +
                     " to " + ResourcePartUri(uri, parts) + " (" + uri + " is part 1)";
    }
    json item = {{"type", "resource_link"}, {"uri", uri},   {"name", name},
                 {"mimeType", mime},        {"size", size}, {"description", description}};
    if (parts > 1) item["_meta"] = {{"mcp-exec/parts", parts}};
    content.push_back(std::move(item));
  };
  if (!r.stdout_uri.empty()) {
    link(r.stdout_uri, "stdout", "text/plain", r.stdout_size,
         "the whole stdout of the run (" + std::to_string(r.stdout_size) +
             " bytes); the result holds its start and stdout_tail");
  }
  if (!r.stderr_uri.empty()) {
    link(r.stderr_uri, "stderr", "text/plain", r.stderr_size,
         "the whole stderr of the run (" + std::to_string(r.stderr_size) + " bytes)");
  }
  for (const RunArtifact& f : r.files) {
    if (!f.uri.empty()) {
      link(f.uri, f.name, MimeTypeForPath(f.name), f.size,
           f.name + ", too big to embed (" + std::to_string(f.size) + " bytes)");
      continue;
    }
    content.push_back(
        {{"type", "resource"},
         {"resource", ResourceContentsItem(FileUri(f.name), MimeTypeForPath(f.name), f.data)}});
  }
  return {
      {"content", content},
      {"structuredContent", structured},
      {"isError", false},
  };
}

json ToolError(const std::string& message) { return ToolErrorResult(message); }

}  // namespace mcpexec
