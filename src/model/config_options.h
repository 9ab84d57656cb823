// The table of the server's options (each a variable and a flag, with its
// default, unit, help and parser), which config.cc reads to parse, check,
// list and document them. Internal to the configuration.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/config.h"

namespace mcpexec::config_internal {

constexpr int64_t kMiB = int64_t{1024} * 1024;

struct Option {
  const char* env;
  const char* flag;
  std::string default_text;  // read off Config{} wherever a value stands for itself
  const char* unit;
  const char* help;
  // Parses and stores the value; returns an empty string or a reason.
  std::function<std::string(Config&, const std::string&)> set;
};

// Every option, in the order --help lists them.
const std::vector<Option>& Options();

}  // namespace mcpexec::config_internal
