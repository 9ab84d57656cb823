#include "upstream/schema.h"

#include <re2/re2.h>

#include <new>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/constraint_builder.hpp>
#include <valijson/constraints/concrete_constraints.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

namespace mcpexec::upstream {

namespace {

using valijson::ValidationResults;
using valijson::adapters::Adapter;
using valijson::constraints::Constraint;
using valijson::constraints::PolyConstraint;

// The keywords the schema is rewritten to, checked by the constraints below
// (valijson calls a keyword it does not know a custom one's).
constexpr const char* kPatternKey = "x-mcp-exec-pattern";
constexpr const char* kFormatKey = "x-mcp-exec-format";
// $ref and $id values longer than this would go through valijson's URN
// regex (std::regex, recursive); an upstream has no reason to send one.
constexpr size_t kMaxIdentifierBytes = 1024;

// "pattern": an unanchored search, as JSON Schema's ECMA-262 pattern is.
class Re2Pattern final : public PolyConstraint {
 public:
  Re2Pattern(std::shared_ptr<const re2::RE2> re, std::string pattern)
      : re_(std::move(re)), pattern_(std::move(pattern)) {}
  bool validate(const Adapter& target, const std::vector<std::string>& context,
                ValidationResults* results) const override {
    if (!target.isString()) return true;
    if (re2::RE2::PartialMatch(target.getString(), *re_)) return true;
    if (results) results->pushError(context, "the string does not match the pattern " + pattern_);
    return false;
  }

 private:
  Constraint* cloneInto(void* where) const override { return new (where) Re2Pattern(*this); }
  size_t sizeOf() const override { return sizeof(Re2Pattern); }
  std::shared_ptr<const re2::RE2> re_;
  std::string pattern_;
};

class DateFormat final : public PolyConstraint {
 public:
  explicit DateFormat(std::string format) : format_(std::move(format)) {}
  bool validate(const Adapter& target, const std::vector<std::string>& context,
                ValidationResults* results) const override {
    if (!target.isString() || IsRfc3339(format_, target.getString())) return true;
    if (results) {
      results->pushError(
          context, "the string is not a valid " + format_ + " (RFC 3339, e.g. " + Example() + ")");
    }
    return false;
  }

 private:
  const char* Example() const {
    return format_ == "date"   ? "2026-12-05"
           : format_ == "time" ? "09:30:00Z"
                               : "2026-12-05T09:30:00Z";
  }
  Constraint* cloneInto(void* where) const override { return new (where) DateFormat(*this); }
  size_t sizeOf() const override { return sizeof(DateFormat); }
  std::string format_;
};

class PatternBuilder final : public valijson::ConstraintBuilder {
 public:
  Constraint* make(const Adapter& value) const override {
    const std::string pattern = value.getString();
    re2::RE2::Options options;
    options.set_log_errors(false);
    return new Re2Pattern(std::make_shared<const re2::RE2>(pattern, options), pattern);
  }
};

class FormatBuilder final : public valijson::ConstraintBuilder {
 public:
  Constraint* make(const Adapter& value) const override {
    return new DateFormat(value.getString());
  }
};

bool IsDateFormat(const std::string& f) { return f == "date" || f == "time" || f == "date-time"; }

// Rewrites one schema object in place, then the schemas inside it: an
// explicit stack, since the schema is an upstream's (bounded in depth by
// the parse, but walked without recursion all the same).
bool Rewrite(nlohmann::json* root, std::vector<std::string>* left_out, std::string* why) {
  static const char* const kOneSchema[] = {"items",
                                           "additionalItems",
                                           "additionalProperties",
                                           "not",
                                           "contains",
                                           "propertyNames",
                                           "if",
                                           "then",
                                           "else",
                                           "unevaluatedItems",
                                           "unevaluatedProperties"};
  static const char* const kSchemaArrays[] = {"allOf", "anyOf", "oneOf", "prefixItems", "items"};
  static const char* const kSchemaMaps[] = {"properties", "definitions", "$defs",
                                            "dependentSchemas", "dependencies"};
  std::vector<std::pair<nlohmann::json*, std::string>> todo = {{root, ""}};
  while (!todo.empty()) {
    auto [node, where] = todo.back();
    todo.pop_back();
    if (!node->is_object()) continue;
    nlohmann::json& s = *node;
    for (const char* id : {"$ref", "$id", "id"}) {
      auto it = s.find(id);
      if (it != s.end() && it->is_string() &&
          it->get_ref<const std::string&>().size() > kMaxIdentifierBytes) {
        *why = std::string("a \"") + id + "\" of more than " + std::to_string(kMaxIdentifierBytes) +
               " bytes at " + (where.empty() ? "/" : where);
        return false;
      }
    }
    if (auto it = s.find("pattern"); it != s.end() && it->is_string()) {
      re2::RE2::Options options;
      options.set_log_errors(false);
      const re2::RE2 re(it->get<std::string>(), options);
      if (re.ok()) {
        s[kPatternKey] = *it;
      } else {
        left_out->push_back("\"pattern\" at " + (where.empty() ? "/" : where) + " (" + re.error() +
                            ")");
      }
      s.erase("pattern");
    }
    if (auto it = s.find("format");
        it != s.end() && it->is_string() && IsDateFormat(it->get_ref<const std::string&>())) {
      s[kFormatKey] = *it;
      s.erase("format");
    }
    if (s.contains("patternProperties")) {
      left_out->push_back(
          "\"patternProperties\" at " + (where.empty() ? "/" : where) +
          (s.contains("additionalProperties") ? " and the additionalProperties beside it" : ""));
      s.erase("patternProperties");
      s.erase("additionalProperties");
    }
    for (const char* key : kOneSchema) {
      if (auto it = s.find(key); it != s.end() && it->is_object()) {
        todo.push_back({&*it, where + "/" + key});
      }
    }
    for (const char* key : kSchemaArrays) {
      if (auto it = s.find(key); it != s.end() && it->is_array()) {
        for (size_t i = 0; i < it->size(); ++i) {
          todo.push_back({&(*it)[i], where + "/" + key + "/" + std::to_string(i)});
        }
      }
    }
    for (const char* key : kSchemaMaps) {
      if (auto it = s.find(key); it != s.end() && it->is_object()) {
        for (auto& [name, sub] : it->items())
          todo.push_back({&sub, where + "/" + key + "/" + name});
      }
    }
  }
  return true;
}

bool Digits(const std::string& s, size_t at, size_t n, int* value) {
  if (at + n > s.size()) return false;
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *value = v;
  return true;
}

// full-date at s[at..at+10): YYYY-MM-DD with the month's days.
bool FullDate(const std::string& s, size_t at) {
  int y = 0, m = 0, d = 0;
  if (!Digits(s, at, 4, &y) || s.size() < at + 10 || s[at + 4] != '-' ||
      !Digits(s, at + 5, 2, &m) || s[at + 7] != '-' || !Digits(s, at + 8, 2, &d)) {
    return false;
  }
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || d < 1) return false;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

// full-time from s[at] to the end: HH:MM:SS[.frac](Z|+HH:MM|-HH:MM).
bool FullTime(const std::string& s, size_t at) {
  int h = 0, mi = 0, sec = 0;
  if (!Digits(s, at, 2, &h) || s.size() < at + 8 || s[at + 2] != ':' ||
      !Digits(s, at + 3, 2, &mi) || s[at + 5] != ':' || !Digits(s, at + 6, 2, &sec) || h > 23 ||
      mi > 59 || sec > 60) {
    return false;
  }
  size_t i = at + 8;
  if (i < s.size() && s[i] == '.') {
    const size_t first = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == first) return false;
  }
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) return i + 1 == s.size();
  int oh = 0, om = 0;
  return i + 6 == s.size() && (s[i] == '+' || s[i] == '-') && Digits(s, i + 1, 2, &oh) &&
         s[i + 3] == ':' && Digits(s, i + 4, 2, &om) && oh <= 23 && om <= 59;
}

}  // namespace

bool IsRfc3339(const std::string& format, const std::string& s) {
  if (format == "date") return s.size() == 10 && FullDate(s, 0);
  if (format == "time") return FullTime(s, 0);
  if (format == "date-time") {
    return s.size() > 11 && FullDate(s, 0) && (s[10] == 'T' || s[10] == 't') && FullTime(s, 11);
  }
  return true;
}

struct ArgumentSchema::Impl {
  valijson::Schema schema;
};

ArgumentSchema::ArgumentSchema() : impl_(std::make_unique<Impl>()) {}
ArgumentSchema::~ArgumentSchema() = default;

std::unique_ptr<ArgumentSchema> ArgumentSchema::Compile(const nlohmann::json& schema,
                                                        std::string* why,
                                                        std::vector<std::string>* left_out) {
  if (!schema.is_object()) {
    *why = "it is not an object";
    return nullptr;
  }
  nlohmann::json rewritten = schema;
  if (!Rewrite(&rewritten, left_out, why)) return nullptr;
  try {
    std::unique_ptr<ArgumentSchema> out(new ArgumentSchema());
    valijson::SchemaParser parser;
    parser.addConstraintBuilder(kPatternKey, new PatternBuilder());
    parser.addConstraintBuilder(kFormatKey, new FormatBuilder());
    valijson::adapters::NlohmannJsonAdapter adapter(rewritten);
    parser.populateSchema(adapter, out->impl_->schema);
    return out;
  } catch (const std::exception& e) {
    *why = e.what();
    return nullptr;
  }
}

std::string ArgumentSchema::Check(const nlohmann::json& arguments) const {
  valijson::Validator validator;
  ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(arguments);
  if (validator.validate(impl_->schema, target, &results)) return "";
  std::string why;
  ValidationResults::Error e;
  int shown = 0;
  while (results.popError(e) && shown < 3) {
    if (e.description.find("Failed to validate against schema") != std::string::npos) continue;
    std::string where;
    for (const std::string& c : e.context) where += c == "<root>" ? "" : c;
    why += (why.empty() ? "" : "; ") + (where.empty() ? "" : where + ": ") + e.description;
    ++shown;
  }
  return why.empty() ? "they do not match its input schema" : why;
}

}  // namespace mcpexec::upstream
