#include "model/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

namespace mcpexec {
namespace {

ParseResult Parse(std::map<std::string, std::string> env, std::vector<std::string> args = {}) {
  return ParseConfig(env, args);
}

TEST(ConfigTest, DefaultsMatchTheContract) {
  ParseResult r = Parse({});
  ASSERT_TRUE(r.config) << r.error;
  const Config& c = *r.config;
  EXPECT_EQ(c.transport, Transport::kStdio);
  EXPECT_EQ(c.addr, ":8080");
  EXPECT_EQ(c.default_timeout_s, 30);
  EXPECT_EQ(c.max_timeout_s, 300);
  EXPECT_EQ(c.max_output_bytes, 1048576);
  EXPECT_EQ(c.max_stdin_bytes, 1048576);
  EXPECT_EQ(c.python, "python3");
  EXPECT_EQ(c.auth_token, "");
  EXPECT_GE(c.max_concurrent, 1);  // number of CPUs
  EXPECT_EQ(c.max_queue, 64);
  EXPECT_EQ(c.max_code_bytes, 1048576);
}

TEST(ConfigTest, ReadsEveryVariable) {
  ParseResult r = Parse({{"MCP_EXEC_TRANSPORT", "sse"},
                         {"MCP_EXEC_ADDR", "127.0.0.1:9000"},
                         {"MCP_EXEC_DEFAULT_TIMEOUT_S", "5"},
                         {"MCP_EXEC_MAX_TIMEOUT_S", "60"},
                         {"MCP_EXEC_MAX_OUTPUT_BYTES", "100"},
                         {"MCP_EXEC_MAX_STDIN_BYTES", "0"},
                         {"MCP_EXEC_PYTHON", "/usr/bin/python3"},
                         {"MCP_EXEC_AUTH_TOKEN", "s3cret"},
                         {"MCP_EXEC_MAX_CONCURRENT", "3"},
                         {"MCP_EXEC_MAX_QUEUE", "7"},
                         {"MCP_EXEC_MAX_CODE_BYTES", "4096"}});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->transport, Transport::kSse);
  EXPECT_EQ(r.config->addr, "127.0.0.1:9000");
  EXPECT_EQ(r.config->default_timeout_s, 5);
  EXPECT_EQ(r.config->max_timeout_s, 60);
  EXPECT_EQ(r.config->max_output_bytes, 100);
  EXPECT_EQ(r.config->max_stdin_bytes, 0);
  EXPECT_EQ(r.config->python, "/usr/bin/python3");
  EXPECT_EQ(r.config->auth_token, "s3cret");
  EXPECT_EQ(r.config->max_concurrent, 3);
  EXPECT_EQ(r.config->max_queue, 7);
  EXPECT_EQ(r.config->max_code_bytes, 4096);
}

struct BadValue {
  const char* var;
  const char* value;
};

class ConfigBadValueTest : public ::testing::TestWithParam<BadValue> {};

TEST_P(ConfigBadValueTest, IsAnErrorNamingTheVariable) {
  ParseResult r = Parse({{GetParam().var, GetParam().value}});
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.error.find(GetParam().var), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find('\n'), std::string::npos) << "one line";
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, ConfigBadValueTest,
    ::testing::Values(
        BadValue{"MCP_EXEC_DEFAULT_TIMEOUT_S", "abc"}, BadValue{"MCP_EXEC_DEFAULT_TIMEOUT_S", ""},
        BadValue{"MCP_EXEC_DEFAULT_TIMEOUT_S", "1.5"}, BadValue{"MCP_EXEC_DEFAULT_TIMEOUT_S", "-"},
        BadValue{"MCP_EXEC_DEFAULT_TIMEOUT_S", "--1"}, BadValue{"MCP_EXEC_DEFAULT_TIMEOUT_S", " 5"},
        BadValue{"MCP_EXEC_MAX_TIMEOUT_S", "99999999999999999999"},
        BadValue{"MCP_EXEC_MAX_TIMEOUT_S", "-99999999999999999999"},
        BadValue{"MCP_EXEC_MAX_OUTPUT_BYTES", "1e6"}, BadValue{"MCP_EXEC_MAX_STDIN_BYTES", "lots"},
        BadValue{"MCP_EXEC_TRANSPORT", "websocket"}, BadValue{"MCP_EXEC_TRANSPORT", ""},
        BadValue{"MCP_EXEC_ADDR", "8080"}, BadValue{"MCP_EXEC_ADDR", ":99999"},
        BadValue{"MCP_EXEC_PYTHON", ""}, BadValue{"MCP_EXEC_MAX_CONCURRENT", "0"},
        BadValue{"MCP_EXEC_MAX_QUEUE", "x"}, BadValue{"MCP_EXEC_MAX_CODE_BYTES", "0"},
        BadValue{"MCP_EXEC_WORKDIR_ROOT", "relative"}, BadValue{"MCP_EXEC_LOG_LEVEL", "loud"}));

// The Go server reads its four numeric settings as any integer and starts;
// so does this one, at the nearest value it takes, saying so.
TEST(ConfigTest, TheGoServersOutOfRangeNumbersStartAtTheNearestWithAWarning) {
  struct Case {
    const char* var;
    const char* value;
    int64_t Config::*field;
    int64_t used;
  };
  for (const Case& k : {
           Case{"MCP_EXEC_DEFAULT_TIMEOUT_S", "0", &Config::default_timeout_s, 1},
           Case{"MCP_EXEC_DEFAULT_TIMEOUT_S", "-5", &Config::default_timeout_s, 1},
           Case{"MCP_EXEC_MAX_TIMEOUT_S", "0", &Config::max_timeout_s, 1},
           Case{"MCP_EXEC_MAX_TIMEOUT_S", "100000", &Config::max_timeout_s, 86400},
           Case{"MCP_EXEC_MAX_OUTPUT_BYTES", "-1", &Config::max_output_bytes, 0},
           Case{"MCP_EXEC_MAX_OUTPUT_BYTES", "9000000000", &Config::max_output_bytes, 268435456},
           Case{"MCP_EXEC_MAX_STDIN_BYTES", "-1", &Config::max_stdin_bytes, 0},
           Case{"MCP_EXEC_MAX_STDIN_BYTES", "+1000", &Config::max_stdin_bytes, 1000},
       }) {
    ParseResult r = Parse({{k.var, k.value}});
    ASSERT_TRUE(r.config) << k.var << "=" << k.value << ": " << r.error;
    EXPECT_EQ((*r.config).*k.field, k.used) << k.var << "=" << k.value;
    const std::string said = ::testing::PrintToString(r.config->warnings);
    if (k.used == 1000) {
      EXPECT_TRUE(r.config->warnings.empty()) << said;
      continue;
    }
    EXPECT_NE(said.find(std::string(k.var) + " is " + k.value), std::string::npos) << said;
    EXPECT_NE(said.find("it uses " + std::to_string(k.used)), std::string::npos) << said;
  }
  // A flag read after the variable decides; the warning is about what is used.
  ParseResult r = Parse({{"MCP_EXEC_MAX_TIMEOUT_S", "0"}}, {"--max-timeout-s=60"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->max_timeout_s, 60);
  EXPECT_TRUE(r.config->warnings.empty()) << ::testing::PrintToString(r.config->warnings);
}

// A mistyped variable would be silently ignored: it is a warning naming the
// nearest setting. The transport takes the names clients and docs use.
TEST(ConfigTest, AnUnknownVariableIsAWarningNamingTheNearestSetting) {
  ParseResult r = Parse({{"MCP_EXEC_MAX_TIMEOUT", "60"},
                         {"MCP_EXEC_TIMEOUT_S", "60"},
                         {"MCP_EXEC_NOTHING_LIKE_ANY_OF_THEM", "1"},
                         {"MCP_EXEC_MAX_TIMEOUT_S", "60"},
                         {"OTHER_VARIABLE", "1"},
                         // Docker and Kubernetes links for a service named mcp-exec.
                         {"MCP_EXEC_PORT", "tcp://10.0.0.1:8080"},
                         {"MCP_EXEC_PORT_8080_TCP_ADDR", "10.0.0.1"},
                         {"MCP_EXEC_SERVICE_HOST", "10.0.0.1"}});
  ASSERT_TRUE(r.config) << r.error;
  const std::string said = ::testing::PrintToString(r.config->warnings);
  EXPECT_EQ(r.config->warnings.size(), 3u) << said;
  EXPECT_NE(said.find("MCP_EXEC_MAX_TIMEOUT is not a setting of this server and is ignored (did "
                      "you mean MCP_EXEC_MAX_TIMEOUT_S?)"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("MCP_EXEC_TIMEOUT_S is not a setting"), std::string::npos) << said;
  EXPECT_NE(said.find("MCP_EXEC_NOTHING_LIKE_ANY_OF_THEM is not a setting of this server and is "
                      "ignored (mcp-exec --help lists them)"),
            std::string::npos)
      << said;
  for (const char* http : {"http", "HTTP", "streamable-http", "Streamable-HTTP"}) {
    r = Parse({{"MCP_EXEC_TRANSPORT", http}});
    ASSERT_TRUE(r.config) << http << ": " << r.error;
    EXPECT_EQ(r.config->transport, Transport::kHttp) << http;
  }
  r = Parse({{"MCP_EXEC_TRANSPORT", "SSE"}});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->transport, Transport::kSse);
  r = Parse({{"MCP_EXEC_TRANSPORT", "websocket"}});
  EXPECT_NE(r.error.find("must be stdio, http (or streamable-http) or sse"), std::string::npos)
      << r.error;
}

TEST(ConfigTest, FlagWinsOverVariable) {
  ParseResult r = Parse({{"MCP_EXEC_MAX_TIMEOUT_S", "60"}}, {"--max-timeout-s=90"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->max_timeout_s, 90);
  r = Parse({}, {"--max-timeout-s", "91"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->max_timeout_s, 91);
}

TEST(ConfigTest, BadFlagIsAnErrorNamingTheFlag) {
  ParseResult r = Parse({}, {"--max-timeout-s=soon"});
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.error.find("--max-timeout-s"), std::string::npos) << r.error;
  r = Parse({}, {"--no-such-flag"});
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.error.find("--no-such-flag"), std::string::npos) << r.error;
  r = Parse({}, {"--max-queue"});
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.error.find("needs a value"), std::string::npos) << r.error;
}

// `*` turns the Origin guard off: any web page could run code without a
// token, so it is refused without one, naming both settings.
TEST(ConfigTest, AWildcardOriginNeedsAToken) {
  for (const char* origins : {"*", "http://a.example, *", " * "}) {
    ParseResult r = Parse({{"MCP_EXEC_ALLOWED_ORIGINS", origins}}, {});
    EXPECT_FALSE(r.config) << origins;
    EXPECT_NE(r.error.find("MCP_EXEC_ALLOWED_ORIGINS"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("MCP_EXEC_AUTH_TOKEN"), std::string::npos) << r.error;
    r = Parse({{"MCP_EXEC_ALLOWED_ORIGINS", origins}, {"MCP_EXEC_AUTH_TOKEN", "s3cret-token"}}, {});
    EXPECT_TRUE(r.config) << origins << ": " << r.error;
  }
  EXPECT_TRUE(Parse({{"MCP_EXEC_ALLOWED_ORIGINS", "http://a.example,http://*.b"}}, {}).config);
}

TEST(ConfigTest, AddrBracketsSurroundAWholeIpv6HostOnly) {
  for (const char* good : {"127.0.0.1:8080", ":8080", "[::1]:8080", "localhost:0"}) {
    ParseResult r = Parse({}, {std::string("--addr=") + good});
    EXPECT_TRUE(r.config) << good << ": " << r.error;
  }
  for (const char* bad : {"[abc:80", "abc]:80", "[::1:80", "a[b]:80", "::1:80", "host"}) {
    ParseResult r = Parse({}, {std::string("--addr=") + bad});
    EXPECT_FALSE(r.config) << bad;
    EXPECT_NE(r.error.find("--addr"), std::string::npos) << r.error;
  }
}

TEST(ConfigTest, HelpListsEveryVariableWithItsFlagAndDefault) {
  ParseResult r = Parse({}, {"--help"});
  ASSERT_FALSE(r.print_and_exit.empty());
  for (const char* s :
       {"MCP_EXEC_TRANSPORT", "--transport", "MCP_EXEC_ADDR", "--addr",
        "MCP_EXEC_DEFAULT_TIMEOUT_S", "MCP_EXEC_MAX_TIMEOUT_S", "MCP_EXEC_MAX_OUTPUT_BYTES",
        "MCP_EXEC_MAX_STDIN_BYTES", "MCP_EXEC_PYTHON", "MCP_EXEC_AUTH_TOKEN",
        "MCP_EXEC_MAX_CONCURRENT", "MCP_EXEC_MAX_QUEUE", "MCP_EXEC_MAX_CODE_BYTES",
        "MCP_EXEC_MAX_REQUEST_BYTES", "MCP_EXEC_WORKDIR_ROOT", "MCP_EXEC_LOG_LEVEL",
        "default: 30, unit: s", "default: 1048576, unit: bytes"}) {
    EXPECT_NE(r.print_and_exit.find(s), std::string::npos) << s;
  }
}

// README's configuration table is the operator's view of the same list: it
// names every option, with its flag and its default, and nothing else.
TEST(ConfigTest, ReadmeTableMatchesTheOptions) {
  std::ifstream readme(std::string(MCP_EXEC_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(readme) << "README.md not found";
  std::map<std::string, std::pair<std::string, std::string>> rows;  // env -> (flag, default)
  std::regex row(R"(^\| `(MCP_EXEC_[A-Z_]+)` \| `(--[a-z-]+)` \| ([^|]+) \|)");
  std::string line;
  while (std::getline(readme, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    std::string cell = m[3];
    cell.erase(std::remove(cell.begin(), cell.end(), '`'), cell.end());
    rows[m[1]] = {m[2], cell};
  }
  std::vector<OptionDoc> docs = OptionDocs();
  EXPECT_EQ(rows.size(), docs.size()) << "README's table and --help list different options";
  for (const OptionDoc& d : docs) {
    auto it = rows.find(d.env);
    ASSERT_NE(it, rows.end()) << d.env << " is missing from README's table";
    EXPECT_EQ(it->second.first, d.flag) << d.env;
    std::string want = d.default_text;
    if (want.size() > 2 && want.front() == '(' && want.back() == ')') {
      want = want.substr(1, want.size() - 2);
    }
    const std::string& cell = it->second.second;
    EXPECT_TRUE(cell == want || cell.rfind(want + " ", 0) == 0)
        << d.env << ": README says the default is \"" << cell << "\", --help says \""
        << d.default_text << "\"";
  }
}

// Servers side by side each give their runs a uid of their own; root's,
// or one past what setresuid takes, is refused with the variable's name.
TEST(ConfigTest, SandboxUidIsChecked) {
  ParseResult r = Parse({});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->sandbox_uid, 65532);
  r = Parse({{"MCP_EXEC_SANDBOX_UID", "200001"}});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->sandbox_uid, 200001);
  r = Parse({}, {"--sandbox-uid=300"});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->sandbox_uid, 300);
  for (const char* bad : {"0", "-5", "2147483647", "root"}) {
    r = Parse({{"MCP_EXEC_SANDBOX_UID", bad}});
    EXPECT_FALSE(r.config) << bad;
    EXPECT_NE(r.error.find("MCP_EXEC_SANDBOX_UID"), std::string::npos) << r.error;
  }
}

TEST(ConfigTest, DefaultsInHelpAreTheConfigsOwn) {
  ParseResult r = Parse({}, {"--help"});
  Config defaults;
  for (const std::string& s :
       {"default: " + std::to_string(defaults.default_timeout_s) + ", unit: s",
        "default: " + std::to_string(defaults.memory_limit_mb) + ", unit: MiB",
        "default: " + defaults.addr, "default: " + defaults.workdir_root}) {
    EXPECT_NE(r.print_and_exit.find(s), std::string::npos) << s;
  }
}

TEST(ConfigTest, VersionFlag) {
  ParseResult r = Parse({}, {"--version"});
  EXPECT_EQ(r.print_and_exit.rfind("mcp-exec ", 0), 0u);
}

TEST(ConfigTest, RequestCapIsDerivedFromCodeAndStdinCaps) {
  Config c;
  c.max_code_bytes = 100;
  c.max_stdin_bytes = 50;
  c.max_in_bytes = 25;
  EXPECT_EQ(EffectiveMaxRequestBytes(c), 6 * 175 + 64 * 1024);
  c.max_request_bytes = 2048;
  EXPECT_EQ(EffectiveMaxRequestBytes(c), 2048);
}

// MCP_EXEC_MOUNTS: the syntax, the modes, and what the checks make of it
// (the folders are this test's own, made under a fresh temporary folder).
// A folder the runs' uid cannot use as mounted fails later with a bare
// PermissionError: the start says so, naming the uid and the fix.
TEST(ConfigTest, AMountTheRunsCannotUseIsAWarningNamingTheUidAndTheFix) {
  if (geteuid() != 0) GTEST_SKIP() << "runs are the sandbox uid only when started as root";
  char tmpl[] = "/var/tmp/mcp-exec-config-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string base = tmpl;
  ASSERT_EQ(chmod(base.c_str(), 0755), 0);
  for (const auto& [name, mode] : std::vector<std::pair<std::string, mode_t>>{
           {"ro_ok", 0755}, {"ro_closed", 0700}, {"rw_closed", 0755}, {"rw_open", 0777}}) {
    ASSERT_EQ(mkdir((base + "/" + name).c_str(), 0700), 0);
    ASSERT_EQ(chmod((base + "/" + name).c_str(), mode), 0);
  }
  auto r = Parse({{"MCP_EXEC_MOUNTS", base + "/ro_ok:/a," + base + "/ro_closed:/b," + base +
                                          "/rw_closed:/c:rw," + base + "/rw_open:/d:rw"},
                  {"MCP_EXEC_SANDBOX_UID", "65532"}});
  ASSERT_TRUE(r.config) << r.error;
  const std::string said = ::testing::PrintToString(r.config->warnings);
  EXPECT_EQ(r.config->warnings.size(), 2u) << said;
  EXPECT_NE(said.find("runs (uid 65532) cannot list or read files in " + base +
                      "/ro_closed (ro; owner uid 0, group 0, mode 0700)"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("chown -R 65532:65532 " + base + "/ro_closed, or chmod -R o+rX"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("runs (uid 65532) cannot write in " + base + "/rw_closed (rw;"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("or mount it read-only"), std::string::npos) << said;
  // The owner's bits count for the owner, the group's for the group.
  ASSERT_EQ(chown((base + "/rw_closed").c_str(), 65532, 65532), 0);
  EXPECT_EQ(mounts::AccessWarning({base + "/rw_closed", "/c", true, false}, 65532, 65532), "");
  ASSERT_EQ(chown((base + "/ro_closed").c_str(), 0, 65532), 0);
  ASSERT_EQ(chmod((base + "/ro_closed").c_str(), 0750), 0);
  EXPECT_EQ(mounts::AccessWarning({base + "/ro_closed", "/b", false, false}, 65532, 65532), "");
  EXPECT_NE(mounts::AccessWarning({base + "/ro_closed", "/b", false, false}, 65533, 65533), "");
  std::filesystem::remove_all(base);
}

TEST(ConfigTest, MountsAreParsedAndCheckedAgainstTheDisk) {
  char tmpl[] = "/var/tmp/mcp-exec-config-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string base = tmpl;
  ASSERT_EQ(mkdir((base + "/in").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((base + "/out").c_str(), 0755), 0);
  ASSERT_EQ(symlink((base + "/in").c_str(), (base + "/link").c_str()), 0);
  auto r = Parse(
      {{"MCP_EXEC_MOUNTS", " " + base + "/link:/data ," + base + "//out/:/results/:rw:exec,"}});
  ASSERT_TRUE(r.config) << r.error;
  ASSERT_EQ(r.config->mounts.size(), 2u);
  EXPECT_EQ(r.config->mounts[0].host, base + "/in");  // canonical: the link resolved
  EXPECT_EQ(r.config->mounts[0].run, "/data");
  EXPECT_FALSE(r.config->mounts[0].writable);
  EXPECT_FALSE(r.config->mounts[0].exec);
  EXPECT_EQ(r.config->mounts[1].host, base + "/out");
  EXPECT_EQ(r.config->mounts[1].run, "/results");
  EXPECT_TRUE(r.config->mounts[1].writable);
  EXPECT_TRUE(r.config->mounts[1].exec);
  EXPECT_EQ(mounts::Format(r.config->mounts),
            base + "/in:/data:ro," + base + "/out:/results:rw:exec");
  // A read-only folder inside a writable one would be writable where
  // Landlock grants the host paths; the other way round is fine.
  r = Parse({{"MCP_EXEC_MOUNTS", base + ":/all:rw," + base + "/in:/data"}});
  EXPECT_NE(r.error.find("is read-only but lies inside the read-write"), std::string::npos)
      << r.error;
  r = Parse({{"MCP_EXEC_MOUNTS", base + ":/all," + base + "/out:/results:rw"}});
  EXPECT_TRUE(r.config) << r.error;
  // A folder that holds the runs' directories is refused.
  r = Parse(
      {{"MCP_EXEC_MOUNTS", base + "/in:/data"}, {"MCP_EXEC_WORKDIR_ROOT", base + "/in/runs"}});
  EXPECT_NE(r.error.find("holds MCP_EXEC_WORKDIR_ROOT"), std::string::npos) << r.error;
  for (const char* bad : {"/a", "/a:/b:ro:rw", "/a:/b:exec:ro", "/a:/b:c:d:e", ":/b"}) {
    r = Parse({{"MCP_EXEC_MOUNTS", bad}});
    EXPECT_FALSE(r.config) << bad;
    EXPECT_EQ(r.error.rfind("MCP_EXEC_MOUNTS ", 0), 0u) << r.error;
  }
  EXPECT_TRUE(Parse({{"MCP_EXEC_MOUNTS", ""}}).config);
  rmdir((base + "/in").c_str());
  rmdir((base + "/out").c_str());
  unlink((base + "/link").c_str());
  rmdir(base.c_str());
}

}  // namespace
}  // namespace mcpexec
