// The defaults that read the container's limits: fake /proc and /sys trees
// in the shapes cgroup v1 and v2 give a process on a host and in a container.
#include "base/resources.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "model/config.h"

namespace mcpexec {
namespace {

class FakeTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/resources-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { ASSERT_EQ(system(("rm -rf " + root_).c_str()), 0); }

  void Write(const std::string& rel, const std::string& text) {
    std::string path = root_ + rel;
    for (size_t i = 1; i < path.size(); ++i) {
      if (path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
    }
    std::ofstream(path) << text;
  }

  // A cgroup v1 host: cpu and memory mounted separately, this process in
  // /a/b of memory and /a of cpu.
  void V1(const std::string& mount_root = "/") {
    Write("/proc/self/mountinfo",
          "30 22 0:27 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
          "31 30 0:28 " +
              mount_root +
              " /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
              "34 30 0:31 " +
              mount_root +
              " /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
              "40 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  }

  std::string root_;
};

TEST(ResourcesParse, CpuMax) {
  EXPECT_EQ(ParseCpuMaxMilli("max 100000\n"), -1);
  EXPECT_EQ(ParseCpuMaxMilli("100000 100000\n"), 1000);
  EXPECT_EQ(ParseCpuMaxMilli("150000 100000"), 1500);
  EXPECT_EQ(ParseCpuMaxMilli("50000"), 500);  // the period defaults to 100 ms
  EXPECT_EQ(ParseCpuMaxMilli(""), -1);
  EXPECT_EQ(ParseCpuMaxMilli("x 100000"), -1);
  EXPECT_EQ(ParseCpuMaxMilli("100000 0"), -1);
}

TEST(ResourcesParse, MemoryLimit) {
  EXPECT_EQ(ParseMemoryLimitMb("max\n"), -1);
  EXPECT_EQ(ParseMemoryLimitMb("268435456\n"), 256);
  EXPECT_EQ(ParseMemoryLimitMb("9223372036854771712\n"), -1);  // v1's "no limit"
  EXPECT_EQ(ParseMemoryLimitMb("-1"), -1);
  EXPECT_EQ(ParseMemoryLimitMb(""), -1);
  EXPECT_EQ(ParseMemoryLimitMb("1000"), 1);
}

TEST(ResourcesParse, CpuList) {
  EXPECT_EQ(CountCpuList("0-3,8,10-11\n"), 7);
  EXPECT_EQ(CountCpuList("0"), 1);
  EXPECT_EQ(CountCpuList(""), -1);
  EXPECT_EQ(CountCpuList("3-1"), -1);
}

TEST_F(FakeTree, NoCgroupFilesMeansTheMachine) {
  Resources r = ReadResources(root_, 8, 16384);
  EXPECT_EQ(r.cpus, 8);
  EXPECT_EQ(r.cpus_from, "8 online CPUs");
  EXPECT_EQ(r.memory_mb, 16384);
  EXPECT_EQ(r.memory_from, "physical memory 16384 MiB");
}

TEST_F(FakeTree, AffinityBoundsTheCpus) {
  Write("/proc/self/status", "Name:\tx\nCpus_allowed_list:\t2-3\n");
  Resources r = ReadResources(root_, 8, 16384);
  EXPECT_EQ(r.cpus, 2);
  EXPECT_EQ(r.cpus_from, "CPU affinity: 2 of 8 online CPUs");
}

TEST_F(FakeTree, CgroupV1HostTightestAncestorCounts) {
  V1();
  Write("/proc/self/cgroup", "4:memory:/a/b\n2:cpu,cpuacct:/a\n0::/\n");
  Write("/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  Write("/sys/fs/cgroup/memory/a/memory.limit_in_bytes", "536870912\n");     // 512 MiB
  Write("/sys/fs/cgroup/memory/a/b/memory.limit_in_bytes", "1073741824\n");  // 1 GiB
  Write("/sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_quota_us", "150000\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_period_us", "100000\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  Resources r = ReadResources(root_, 8, 16384);
  EXPECT_EQ(r.memory_mb, 512);
  EXPECT_NE(r.memory_from.find("cgroup v1 memory.limit_in_bytes in /sys/fs/cgroup/memory/a "),
            std::string::npos)
      << r.memory_from;
  EXPECT_EQ(r.cpus, 2) << r.cpus_from;  // 1.5 CPUs of quota: two runs can use it
  EXPECT_NE(r.cpus_from.find("cpu.cfs_quota_us 150000 / cpu.cfs_period_us 100000"),
            std::string::npos)
      << r.cpus_from;
}

// docker/podman on a v1 host without a cgroup namespace: /proc/self/cgroup
// names the host's path, the container sees its own cgroup mounted at the
// top with that path as the mount's root.
TEST_F(FakeTree, CgroupV1ContainerWithoutCgroupNamespace) {
  V1("/machine.slice/libpod-abc.scope");
  Write(
      "/proc/self/cgroup",
      "4:memory:/machine.slice/libpod-abc.scope\n2:cpu,cpuacct:/machine.slice/libpod-abc.scope\n");
  Write("/sys/fs/cgroup/memory/memory.limit_in_bytes", "268435456\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "100000\n");
  Write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  Resources r = ReadResources(root_, 2, 24000);
  EXPECT_EQ(r.memory_mb, 256);
  EXPECT_EQ(r.cpus, 1);
}

// A container with its own cgroup namespace on a v2 host.
TEST_F(FakeTree, CgroupV2Container) {
  Write("/proc/self/mountinfo", "40 22 0:37 / /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n");
  Write("/proc/self/cgroup", "0::/\n");
  Write("/sys/fs/cgroup/memory.max", "268435456\n");
  Write("/sys/fs/cgroup/cpu.max", "100000 100000\n");
  Resources r = ReadResources(root_, 2, 24000);
  EXPECT_EQ(r.memory_mb, 256);
  EXPECT_EQ(r.memory_from,
            "cgroup v2 memory.max in /sys/fs/cgroup (256 MiB; physical memory 24000 MiB)");
  EXPECT_EQ(r.cpus, 1);
  EXPECT_EQ(r.cpus_from,
            "cgroup v2 cpu.max \"100000 100000\" in /sys/fs/cgroup (1 CPU; 2 online CPUs)");
}

TEST_F(FakeTree, CgroupV2Unlimited) {
  Write("/proc/self/mountinfo", "40 22 0:37 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  Write("/proc/self/cgroup", "0::/user.slice/x.scope\n");
  Write("/sys/fs/cgroup/user.slice/x.scope/memory.max", "max\n");
  Write("/sys/fs/cgroup/user.slice/x.scope/cpu.max", "max 100000\n");
  Resources r = ReadResources(root_, 4, 8192);
  EXPECT_EQ(r.memory_mb, 8192);
  EXPECT_EQ(r.cpus, 4);
}

TEST(ResourcesConfig, DefaultsFollowTheContainer) {
  Resources small{1, "cgroup v2 cpu.max", 256, "cgroup v2 memory.max (256 MiB)"};
  ParseResult p = ParseConfig({}, {}, small);
  ASSERT_TRUE(p.config) << p.error;
  EXPECT_EQ(p.config->max_concurrent, 1);
  EXPECT_EQ(p.config->memory_limit_mb, 96);  // never more than the container for a run
  EXPECT_EQ(p.config->disk_limit_mb, 64);    // run directories are memory too
  EXPECT_EQ(p.config->max_py_sessions, 2);
  EXPECT_EQ(p.config->max_processes, 64);  // a fork bomb stays inside the container's memory
  EXPECT_EQ(p.config->max_processes_from,
            "default: one per 4 MiB of cgroup v2 memory.max (256 MiB)");
  EXPECT_EQ(p.config->max_concurrent_from, "default: cgroup v2 cpu.max");
  EXPECT_EQ(p.config->memory_limit_from, "default: 3/8 of cgroup v2 memory.max (256 MiB)");
  EXPECT_EQ(p.config->disk_limit_from, "default: a quarter of cgroup v2 memory.max (256 MiB)");
}

TEST(ResourcesConfig, DefaultsOnABigMachineKeepTheContract) {
  Resources big{2, "2 online CPUs", 24000, "physical memory 24000 MiB"};
  ParseResult p = ParseConfig({}, {}, big);
  ASSERT_TRUE(p.config) << p.error;
  EXPECT_EQ(p.config->max_concurrent, 2);
  EXPECT_EQ(p.config->memory_limit_mb, 512);
  EXPECT_EQ(p.config->disk_limit_mb, 256);
  EXPECT_EQ(p.config->max_py_sessions, 23);
  EXPECT_EQ(p.config->max_processes, 256);
}

TEST(ResourcesConfig, WhatTheOperatorSetWinsAndIsNamed) {
  Resources small{1, "q", 256, "m"};
  ParseResult p =
      ParseConfig({{"MCP_EXEC_MEMORY_LIMIT_MB", "200"}, {"MCP_EXEC_DISK_LIMIT_MB", "90"}},
                  {"--max-concurrent=3", "--max-py-sessions", "5"}, small);
  ASSERT_TRUE(p.config) << p.error;
  EXPECT_EQ(p.config->memory_limit_mb, 200);
  EXPECT_EQ(p.config->memory_limit_from, "MCP_EXEC_MEMORY_LIMIT_MB");
  EXPECT_EQ(p.config->disk_limit_mb, 90);
  EXPECT_EQ(p.config->disk_limit_from, "MCP_EXEC_DISK_LIMIT_MB");
  EXPECT_EQ(p.config->max_concurrent, 3);
  EXPECT_EQ(p.config->max_concurrent_from, "--max-concurrent");
  EXPECT_EQ(p.config->max_py_sessions, 5);
  EXPECT_EQ(p.config->max_py_sessions_from, "--max-py-sessions");
}

}  // namespace
}  // namespace mcpexec
