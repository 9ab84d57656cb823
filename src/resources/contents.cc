#include "resources/contents.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/base64.h"
#include "base/utf8.h"

namespace mcpexec {

using json = nlohmann::json;

std::string MimeTypeForPath(const std::string& path) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".csv", "text/csv"},
      {".tsv", "text/tab-separated-values"},
      {".txt", "text/plain"},
      {".log", "text/plain"},
      {".md", "text/markdown"},
      {".html", "text/html"},
      {".htm", "text/html"},
      {".css", "text/css"},
      {".js", "text/javascript"},
      {".py", "text/x-python"},
      {".json", "application/json"},
      {".jsonl", "application/jsonl"},
      {".xml", "application/xml"},
      {".yaml", "application/yaml"},
      {".yml", "application/yaml"},
      {".toml", "application/toml"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".webp", "image/webp"},
      {".pdf", "application/pdf"},
      {".zip", "application/zip"},
      {".gz", "application/gzip"},
      {".parquet", "application/vnd.apache.parquet"},
      {".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
  };
  std::string lower = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const auto& [ext, type] : kTypes) {
    size_t n = strlen(ext);
    if (lower.size() > n && lower.compare(lower.size() - n, n, ext) == 0) return type;
  }
  return "application/octet-stream";
}

namespace {
// Text where it costs no more than base64 would: a file of control bytes
// would escape six-fold.
bool CheapAsText(const std::string& data) {
  size_t escaped = 0;
  for (unsigned char ch : data) escaped += JsonEscapedBytes(ch);
  return escaped <= data.size() / 3 * 4 + 4 && IsValidUtf8(data);
}
}  // namespace

int64_t ResourceParts(int64_t size) {
  return std::max<int64_t>(1, (size + kResourcePartBytes - 1) / kResourcePartBytes);
}

std::string ResourcePartUri(const std::string& uri, int64_t part) {
  return uri + "?part=" + std::to_string(part);
}

json ResourceContentsItem(const std::string& uri, const std::string& mime,
                          const std::string& data) {
  json item = {{"uri", uri}, {"mimeType", mime}};
  if (CheapAsText(data)) {
    item["text"] = data;
  } else {
    item["blob"] = Base64Encode(data);
  }
  return item;
}

}  // namespace mcpexec
