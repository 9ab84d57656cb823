// A fixture for unit tests of what stands on the executor: an Executor on
// a ScriptedSandbox (scripted_sandbox.h), with a folder of the test's own
// for the runs' working directories, removed after the test.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "base/metrics.h"
#include "model/config.h"
#include "scripted_sandbox.h"
#include "supervisor/executor.h"
#include "supervisor/scheduler.h"

namespace mcpexec::testing {

class ScriptedExecutorTest : public ::testing::Test {
 protected:
  // name: the folder's, /tmp/mcp-exec-NAME-test-XXXXXX.
  explicit ScriptedExecutorTest(std::string name) : name_(std::move(name)) {}

  void SetUp() override {
    std::string tmpl = "/tmp/mcp-exec-" + name_ + "-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    config_.workdir_root = root_;
    config_.max_output_bytes = 1 << 20;
    config_.resource_store_mb = 0;
  }
  void TearDown() override {
    executor_.reset();
    std::filesystem::remove_all(root_);
  }
  // The scheduler and the executor, with the config as the test left it.
  Executor& StartExecutor() {
    scheduler_ = std::make_unique<Scheduler>(config_.max_concurrent, config_.max_queue);
    executor_ = std::make_unique<Executor>(config_, sandbox_, *scheduler_, &metrics_);
    std::string error;
    EXPECT_TRUE(executor_->Init(false, &error)) << error;
    return *executor_;
  }

  std::string root_;
  Config config_;
  Metrics metrics_;
  ScriptedSandbox sandbox_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Executor> executor_;

 private:
  std::string name_;
};

}  // namespace mcpexec::testing
