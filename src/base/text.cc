#include "base/text.h"

#include <sstream>

namespace mcpexec {

bool ParseDecimal(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 18) return false;
  int64_t n = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return false;
    n = n * 10 + (ch - '0');
  }
  *out = n;
  return true;
}

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace mcpexec
