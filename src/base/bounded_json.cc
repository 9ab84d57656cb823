#include "base/bounded_json.h"

namespace mcpexec::bounded_json {

int Depth(std::string_view text, int stop_at) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > deepest) {
          deepest = depth;
          if (deepest >= stop_at) return stop_at;
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return deepest;
}

std::string TooDeepError(int max_depth) {
  return "JSON nested deeper than " + std::to_string(max_depth) +
         " levels of arrays and objects, the most this server reads; send it flatter";
}

Parsed Parse(std::string_view text, int max_depth) {
  Parsed out;
  out.value = nlohmann::json(nlohmann::json::value_t::discarded);
  if (Depth(text, max_depth + 1) > max_depth) {
    out.too_deep = true;
    out.error = TooDeepError(max_depth);
    return out;
  }
  try {
    out.value = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    out.value = nlohmann::json(nlohmann::json::value_t::discarded);
    // nlohmann's what() starts with its own tag ("[json.exception.parse_error.101] "):
    // noise to whoever reads the message; "parse error at line L, column C: ..." stays.
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) {
      what.erase(0, what.find("] ") + 2);
    }
    out.error = what.rfind("parse error", 0) == 0 ? what : "parse error: " + what;
  }
  return out;
}

nlohmann::json TopLevelId(std::string_view text) {
  // Keep the top level and its scalar members; every nested array or object
  // is skipped as it is read (the parser itself does not recurse).
  const nlohmann::json::parser_callback_t keep_top = [](int depth, nlohmann::json::parse_event_t e,
                                                        nlohmann::json&) {
    const bool opens = e == nlohmann::json::parse_event_t::object_start ||
                       e == nlohmann::json::parse_event_t::array_start;
    return !(opens && depth >= 1);
  };
  const nlohmann::json top = nlohmann::json::parse(text.begin(), text.end(), keep_top, false);
  if (!top.is_object()) return nullptr;
  auto id = top.find("id");
  if (id == top.end() || !(id->is_string() || id->is_number_integer())) return nullptr;
  return *id;
}

}  // namespace mcpexec::bounded_json
