// Code mode's upstreams without a server: the MCP_EXEC_UPSTREAMS file, the
// allow list, Python names, URLs, and what a tool's result gives the run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "upstream/client.h"
#include "upstream/config.h"
#include "upstream/upstreams.h"

namespace mcpexec::upstream {
namespace {

TEST(UpstreamConfigTest, ReadsTheShapeClientAppsUse) {
  std::vector<Spec> specs;
  std::string error;
  ASSERT_TRUE(ParseSpecs(R"({"mcpServers": {
      "files": {"command": "npx", "args": ["-y", "srv"], "env": {"TOKEN": "abcd1234"},
                "allow": ["read_*", "list"]},
      "web-api": {"url": "http://127.0.0.1:9000/mcp", "headers": {"Authorization": "Bearer xyz9"}}
    }})",
                         &specs, &error))
      << error;
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "files");
  EXPECT_TRUE(specs[0].stdio());
  EXPECT_EQ(specs[0].args, (std::vector<std::string>{"-y", "srv"}));
  EXPECT_FALSE(specs[0].allow_all);
  EXPECT_EQ(specs[0].Secrets(), std::vector<std::string>{"abcd1234"});
  EXPECT_FALSE(specs[1].stdio());
  EXPECT_TRUE(specs[1].allow_all);
  EXPECT_EQ(specs[1].Secrets(), std::vector<std::string>{"Bearer xyz9"});
}

TEST(UpstreamConfigTest, EveryBadEntryIsRefusedNamingIt) {
  struct Case {
    const char* text;
    const char* needle;
  };
  const Case cases[] = {
      {"[]", "not a JSON object"},
      {"{}", "\"mcpServers\""},
      {R"({"mcpServers": {"a": {}}})", "upstream 'a': give either \"command\""},
      {R"({"mcpServers": {"a": {"command": "x", "url": "http://h/"}}})", "not both"},
      {R"({"mcpServers": {"a": {"command": ""}}})", "upstream 'a': \"command\""},
      {R"({"mcpServers": {"a": {"command": "x", "args": "y"}}})", "\"args\" must be an array"},
      {R"({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}})", "\"env\".K must be a string"},
      {R"({"mcpServers": {"a": {"command": "x", "allow": "echo"}}})", "\"allow\" must be"},
      {R"({"mcpServers": {"a": {"command": "x", "headers": {}}}})",
       "\"headers\" and \"ca\" are for a \"url\""},
      {R"({"mcpServers": {"a": {"command": "x", "ca": "c.pem"}}})", "are for a \"url\""},
      {R"({"mcpServers": {"a": {"url": "http://h/", "ca": "c.pem"}}})", "for an https \"url\""},
      {R"({"mcpServers": {"a": {"url": "https://h/", "ca": 1}}})", "\"ca\" must be a file"},
      {R"({"mcpServers": {"a": {"url": "ftp://h/"}}})", "must start with https:// or http://"},
      {R"({"mcpServers": {"a": {"url": "http://h/", "headers": {"X": "a\r\nB: c"}}}})",
       "\"headers\".X holds a line break"},
      {R"({"mcpServers": {"a": {"url": "http://u:p@h/"}}})", "credentials in \"headers\""},
      {R"({"mcpServers": {"a": {"url": "http://h:99999/"}}})", "bad port"},
      {R"({"mcpServers": {"a": {"command": "x", "alow": []}}})", "unknown key \"alow\""},
      {R"({"mcpServers": {"a-b": {"command": "x"}, "a_b": {"command": "y"}}})",
       "would both be mcp_tools.a_b"},
      {R"({"mcpServers": {"search": {"command": "x"}}})",
       "upstream 'search' would be mcp_tools.search, which mcp_tools has for itself"},
  };
  for (const Case& c : cases) {
    std::vector<Spec> specs;
    std::string error;
    EXPECT_FALSE(ParseSpecs(c.text, &specs, &error)) << c.text;
    EXPECT_NE(error.find(c.needle), std::string::npos) << c.text << " -> " << error;
  }
}

// The client apps' ${NAME} references, resolved from the server's own
// environment (here a map standing in for it).
TEST(UpstreamConfigTest, ValuesNameEnvironmentVariables) {
  const std::map<std::string, std::string> env = {
      {"GITHUB_TOKEN", "ghp_secret1"}, {"REGION", "eu"}, {"EMPTY", ""}};
  const Lookup lookup = [&](const std::string& name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::vector<Spec> specs;
  std::string error;
  ASSERT_TRUE(ParseSpecs(R"({"mcpServers": {
      "gh": {"url": "https://api.example/mcp",
             "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}", "X-Cost": "$5",
                         "X-Region": "${REGION}-${ZONE:-1}", "X-Empty": "${UNSET:-}",
                         "X-Blank": "${EMPTY}", "X-Fallback": "${EMPTY:-d}"}},
      "local": {"command": "x", "env": {"TOKEN": "${GITHUB_TOKEN}"}}}})",
                         &specs, &error, lookup))
      << error;
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].headers.at("Authorization"), "Bearer ghp_secret1");
  EXPECT_EQ(specs[0].headers.at("X-Cost"), "$5");
  EXPECT_EQ(specs[0].headers.at("X-Region"), "eu-1");
  EXPECT_EQ(specs[0].headers.at("X-Empty"), "");
  EXPECT_EQ(specs[0].headers.at("X-Blank"), "");
  EXPECT_EQ(specs[0].headers.at("X-Fallback"), "d");  // as a shell: empty takes the default
  EXPECT_EQ(specs[1].env.at("TOKEN"), "ghp_secret1");
  // The variable's value is a secret of its own: a message that shows the
  // token without "Bearer " is masked too.
  const std::vector<std::string> secrets = specs[0].Secrets();
  EXPECT_NE(std::find(secrets.begin(), secrets.end(), "ghp_secret1"), secrets.end());

  const struct {
    const char* text;
    const char* needle;
  } bad[] = {
      {R"({"mcpServers": {"a": {"url": "http://h/", "headers": {"A": "${NOPE}"}}}})",
       "upstream 'a': \"headers\".A names the environment variable NOPE, which is not set"},
      {R"({"mcpServers": {"a": {"command": "x", "env": {"K": "${NOPE}"}}}})",
       "\"env\".K names the environment variable NOPE"},
      {R"({"mcpServers": {"a": {"command": "x", "env": {"K": "${GITHUB_TOKEN"}}}})",
       "is not ${NAME} or ${NAME:-default}"},
      {R"({"mcpServers": {"a": {"command": "x", "env": {"K": "${1X}"}}}})", "is not ${NAME}"},
  };
  for (const auto& c : bad) {
    specs.clear();
    EXPECT_FALSE(ParseSpecs(c.text, &specs, &error, lookup)) << c.text;
    EXPECT_NE(error.find(c.needle), std::string::npos) << c.text << " -> " << error;
    EXPECT_EQ(error.find("ghp_secret1"), std::string::npos) << error;
  }
}

// A relative "ca" is the upstreams file's neighbour; one that is not a
// readable file stops the start.
TEST(UpstreamConfigTest, CaIsTakenBesideTheFile) {
  char dir[] = "/tmp/mcp-exec-ca-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string folder = dir;
  auto write = [](const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  };
  write(folder + "/ca.pem", "-----BEGIN CERTIFICATE-----\n");
  write(folder + "/up.json", R"({"mcpServers": {"t": {"url": "https://h/mcp", "ca": "ca.pem"}}})");
  write(folder + "/bad.json",
        R"({"mcpServers": {"t": {"url": "https://h/mcp", "ca": "missing.pem"}}})");
  std::vector<Spec> specs;
  std::string error;
  ASSERT_TRUE(LoadSpecs(folder + "/up.json", &specs, &error)) << error;
  EXPECT_EQ(specs.at(0).ca, folder + "/ca.pem");
  specs.clear();
  EXPECT_FALSE(LoadSpecs(folder + "/bad.json", &specs, &error));
  EXPECT_NE(error.find("upstream 't': \"ca\" " + folder + "/missing.pem is not a readable file"),
            std::string::npos)
      << error;
  for (const char* name : {"/ca.pem", "/up.json", "/bad.json"}) unlink((folder + name).c_str());
  rmdir(dir);
}

// Credentials are masked in a result's strings only, in one pass each; a
// literal env value (here "true") is no credential and masks nothing.
TEST(UpstreamConfigTest, CredentialsAreMaskedInStringsOnly) {
  std::vector<Spec> specs;
  std::string error;
  const Lookup lookup = [](const std::string&) -> const char* { return "tok-1234567"; };
  ASSERT_TRUE(ParseSpecs(R"({"mcpServers": {"a": {"url": "https://h/",
      "headers": {"Authorization": "Bearer ${T}", "X-Short": "abc"}}, "b": {"command": "x",
      "env": {"DEBUG": "true"}}}})",
                         &specs, &error, lookup))
      << error;
  EXPECT_EQ(specs[0].Credentials(),
            (std::vector<std::string>{"Bearer tok-1234567", "tok-1234567"}));
  EXPECT_TRUE(specs[1].Credentials().empty());
  nlohmann::json result = nlohmann::json::parse(R"({"isError": true,
      "content": [{"type": "text", "text": "sent Bearer tok-1234567, then tok-1234567tok-1234567"}],
      "structuredContent": {"tok-1234567": {"deep": ["tok-1234567"]}}})");
  MaskStrings(&result, specs[0].Credentials());
  EXPECT_EQ(result["content"][0]["text"], "sent ***, then ******");
  EXPECT_EQ(result["isError"], true);
  EXPECT_EQ(result["structuredContent"]["tok-1234567"]["deep"][0], "***") << "keys stay";
}

TEST(UpstreamConfigTest, AllowTakesNamesAndPrefixes) {
  Spec s;
  s.allow_all = false;
  s.allow = {"echo", "get_*"};
  EXPECT_TRUE(Allowed(s, "echo"));
  EXPECT_TRUE(Allowed(s, "get_sum"));
  EXPECT_TRUE(Allowed(s, "get_"));
  EXPECT_FALSE(Allowed(s, "echo2"));
  EXPECT_FALSE(Allowed(s, "get-sum"));
  s.allow = {};
  EXPECT_FALSE(Allowed(s, "echo"));
  s.allow_all = true;
  EXPECT_TRUE(Allowed(s, "anything"));
}

TEST(UpstreamConfigTest, PythonNamesAndUrls) {
  EXPECT_EQ(PythonName("get-sum"), "get_sum");
  EXPECT_EQ(PythonName("my.server/v2"), "my_server_v2");
  EXPECT_EQ(PythonName("2fa"), "_2fa");
  EXPECT_EQ(PythonName("caf\xc3\xa9"), "caf__");
  Url u;
  std::string error;
  ASSERT_TRUE(ParseUrl("http://127.0.0.1:3001/mcp", &u, &error));
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 3001);
  EXPECT_EQ(u.target, "/mcp");
  ASSERT_TRUE(ParseUrl("http://[::1]/", &u, &error));
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 80);
  EXPECT_FALSE(u.tls);
  ASSERT_TRUE(ParseUrl("https://mcp.example.com/v1/mcp", &u, &error));
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.host, "mcp.example.com");
  EXPECT_EQ(u.port, 443);
  EXPECT_EQ(u.target, "/v1/mcp");
  ASSERT_TRUE(ParseUrl("https://127.0.0.1:8443", &u, &error));
  EXPECT_EQ(u.port, 8443);
  EXPECT_EQ(u.target, "/");
}

TEST(UpstreamValueTest, StructuredFirstThenTextThenTheItems) {
  EXPECT_EQ(ValueOf({{"structuredContent", {{"t", 1}}},
                     {"content", {{{"type", "text"}, {"text", "x"}}}}}),
            (nlohmann::json{{"t", 1}}));
  EXPECT_EQ(ValueOf({{"content",
                      {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}}),
            "a\nb");
  nlohmann::json mixed = {{"content",
                           {{{"type", "text"}, {"text", "a"}},
                            {{"type", "image"}, {"data", "iVBO"}, {"mimeType", "image/png"}}}}};
  EXPECT_EQ(ValueOf(mixed), mixed["content"]);
  EXPECT_EQ(ValueOf({{"content", nlohmann::json::array()}}), nlohmann::json::array());
  EXPECT_EQ(ErrorTextOf({{"isError", true}, {"content", {{{"type", "text"}, {"text", "boom"}}}}}),
            "boom");
  EXPECT_EQ(ErrorTextOf({{"isError", true}}), "the tool reported an error without a message");
}

}  // namespace
}  // namespace mcpexec::upstream
