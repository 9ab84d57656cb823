// The zygote's command line: what the supervisor writes parses back to the
// same, and a number past its field's type is refused, never truncated.
// And the run limits' one table: each configurable limit reaches the
// zygote's arguments, the start log and doctor from it.
#include "ipc/zygote_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/config.h"
#include "model/run_limits.h"
#include "supervisor/doctor.h"

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
  a.limits.memory_bytes = 512 << 20;
  a.limits.disk_bytes = 256 << 20;
  a.limits.max_processes = 256;
  a.limits.max_open_files = 1024;
  a.output.max_images = 8;
  a.output.max_image_bytes = 1 << 20;
  a.output.max_out_files = 16;
  a.output.max_out_bytes = 8 << 20;
  a.output.max_result_bytes = 16384;
  a.output.max_image_side = 2000;
  a.output.max_link_bytes = 256 << 20;
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

// Every configurable run limit goes from the config to the zygote's
// arguments and back, and is shown under its name in the start log's and
// doctor's limits, in the units the config has it.
TEST(RunLimitsTest, EachLimitOfTheTableReachesTheZygoteTheLogAndDoctor) {
  Config c;
  c.memory_limit_mb = 300;
  c.disk_limit_mb = 70;
  c.max_processes = 90;
  c.max_open_files = 500;
  ZygoteArgs a = Valid();
  a.limits = RunLimitsOf(c);
  EXPECT_EQ(a.limits.memory_bytes, int64_t{300} << 20);
  EXPECT_EQ(a.limits.disk_bytes, int64_t{70} << 20);
  ZygoteArgs b;
  std::string error;
  ASSERT_TRUE(ParseArgv(a.ToArgv(), &b, &error)) << error;
  const nlohmann::json run = LimitsJson(c)["run"];
  RuntimeReport report;
  report.sandbox = nlohmann::json::object();
  const std::string text = DoctorText(report, c);
  for (const RunLimitField& f : kRunLimitFields) {
    EXPECT_EQ(b.limits.*f.field, a.limits.*f.field) << f.arg;
    int found = 0;
    for (const std::string& item : a.ToArgv()) {
      found += item == std::string("--") + f.arg + "=" + std::to_string(a.limits.*f.field);
    }
    EXPECT_EQ(found, 1) << f.arg;
    EXPECT_EQ(run.value(f.name, int64_t{-1}), f.Shown(a.limits)) << f.name;
    EXPECT_NE(text.find(f.Text(a.limits)), std::string::npos) << f.Text(a.limits) << "\n" << text;
  }
  EXPECT_EQ(run["memory_limit_mb"], 300);
  EXPECT_NE(text.find("memory 300 MiB; disk 70 MiB; 90 processes; 500 open files"),
            std::string::npos)
      << text;
}

// MCP_EXEC_SANDBOX_UID reaches the zygote as the runs' uid and gid; a uid
// past what setresuid takes, or root's, is refused; the gid travels apart
// (a server started as another user gives its runs its own uid and gid).
TEST(RunLimitsTest, TheSandboxUidReachesTheZygoteAsUidAndGid) {
  Config c;
  EXPECT_EQ(RunLimitsOf(c).sandbox_uid, 65532u);
  c.sandbox_uid = 1234567;
  ZygoteArgs a = Valid();
  a.limits = RunLimitsOf(c);
  EXPECT_EQ(a.limits.sandbox_uid, 1234567u);
  EXPECT_EQ(a.limits.sandbox_gid, 1234567u);
  ZygoteArgs b;
  std::string error;
  ASSERT_TRUE(ParseArgv(a.ToArgv(), &b, &error)) << error;
  EXPECT_EQ(b.limits.sandbox_uid, 1234567u);
  EXPECT_EQ(b.limits.sandbox_gid, 1234567u);
  a.limits.sandbox_gid = 42;  // a server started as uid 1234567, gid 42
  ASSERT_TRUE(ParseArgv(a.ToArgv(), &b, &error)) << error;
  EXPECT_EQ(b.limits.sandbox_uid, 1234567u);
  EXPECT_EQ(b.limits.sandbox_gid, 42u);
  for (const char* arg : {"--sandbox-uid=", "--sandbox-gid="}) {
    for (const char* bad : {"0", "-1", "4294967295", "12x"}) {
      std::vector<std::string> argv = a.ToArgv();
      for (std::string& s : argv) {
        if (s.rfind(arg, 0) == 0) s = arg + std::string(bad);
      }
      EXPECT_FALSE(ParseArgv(argv, &b, &error)) << arg << bad;
    }
  }
}
}  // namespace
}  // namespace mcpexec
