// The zygote's command line: what the supervisor writes parses back to the
// same, and a number past its field's type is refused, never truncated.
#include "process/zygote_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mcpexec {
namespace {

bool ParseArgv(std::vector<std::string> items, ZygoteArgs* out, std::string* error) {
  std::vector<char*> argv;
  for (std::string& s : items) argv.push_back(s.data());
  argv.push_back(nullptr);
  return ZygoteArgs::Parse(static_cast<int>(items.size()), argv.data(), out, error);
}

// Arguments the parser takes: every bound at least its least.
ZygoteArgs Valid() {
  ZygoteArgs a;
  a.supervisor = 4242;
  a.spares = 2;
  a.outer_uid = 1000;
  a.outer_gid = 1000;
  a.memory_bytes = 512 << 20;
  a.disk_bytes = 256 << 20;
  a.max_processes = 256;
  a.max_open_files = 1024;
  a.output.max_images = 8;
  a.output.max_image_bytes = 1 << 20;
  a.output.max_out_files = 16;
  a.output.max_out_bytes = 8 << 20;
  a.output.max_result_bytes = 16384;
  return a;
}

TEST(ZygoteArgsTest, WhatItWritesParsesBackToTheSame) {
  const ZygoteArgs a = Valid();
  ZygoteArgs b;
  std::string error;
  ASSERT_TRUE(ParseArgv(a.ToArgv(), &b, &error)) << error;
  EXPECT_EQ(b.ToArgv(), a.ToArgv());
  EXPECT_EQ(b.supervisor, 4242);
}

// Found by fuzz_wire_request: --supervisor=42424259983 was taken as the pid
// -525412977, which the zygote's own command line then could not say again.
TEST(ZygoteArgsTest, ANumberPastItsFieldsTypeIsRefused) {
  std::vector<std::string> argv = Valid().ToArgv();
  for (std::string& s : argv) {
    if (s.rfind("--supervisor=", 0) == 0) s = "--supervisor=42424259983";
  }
  ZygoteArgs b;
  std::string error;
  EXPECT_FALSE(ParseArgv(argv, &b, &error));
  EXPECT_NE(error.find("supervisor"), std::string::npos) << error;
}

}  // namespace
}  // namespace mcpexec
