// The HTTP transport's policy functions: token comparison, the listen
// address, and the Host/Origin checks that stop DNS rebinding. A rebinding
// page names the server by a DNS name the attacker controls, so only the
// literal loopback forms may pass: a name that merely starts with "127."
// (127.evil.example, 127.0.0.1.nip.io) resolves wherever its owner wants.
#include <gtest/gtest.h>

#include "transport/http_transport.h"

namespace mcpexec::http_policy {
namespace {

// Every Host form a loopback-bound server must accept.
const char* const kLoopbackHosts[] = {
    "localhost", "localhost:8080",        "LocalHost:1", "127.0.0.1", "127.0.0.1:8080",
    "127.1.2.3", "127.255.255.255:65535", "127.0.0.0:0", "[::1]",     "[::1]:8080",
};

// Look-alikes: names a DNS owner controls, and malformed or ambiguous
// literals that some resolver might still map somewhere else.
const char* const kLookAlikeHosts[] = {
    "127.evil.example",
    "127.evil.example:8080",
    "127.0.0.1.nip.io",
    "127.0.0.1.nip.io:80",
    "127.0.0.1evil",
    "127.0.0.1evil:80",
    "127.1",
    "127.1:8080",
    "127.0.1",
    "127.0.0.1.",
    "127.0.0.256",
    "127.0.0.1:",
    "127.0.0.1:80x",
    "127.0.0.1:8080:80",
    "127.0.0.1:-1",
    "127.0.0.1:99999",
    "127.0.0.1: 80",
    " 127.0.0.1",
    "127.0.0.1 ",
    "127..0.1",
    "0127.0.0.1",
    "127.0.0.01",
    "127.00.0.1",
    "0x7f.0.0.1",
    "2130706433",
    "128.0.0.1",
    "12.7.0.0.1",
    "localhost.",
    "localhost.evil.example",
    "evil.localhost",
    "localhostevil",
    "localhost:",
    "[::1",
    "[::1]x",
    "[::1]:",
    "[::1]:80x",
    "[::2]",
    "[0:0:0:0:0:0:0:1]",
    "[::ffff:127.0.0.1]",
    "::1",
    "evil.example",
    "evil.example:8080",
    "",
};

TEST(HttpPolicyTest, HostOnLoopbackBindAcceptsOnlyLiteralLoopbackForms) {
  for (const char* h : kLoopbackHosts) EXPECT_TRUE(HostAllowed(h, true)) << h;
  for (const char* h : kLookAlikeHosts) {
    if (*h == '\0') continue;  // no Host at all: not a browser (HTTP/1.0)
    EXPECT_FALSE(HostAllowed(h, true)) << h;
  }
  EXPECT_TRUE(HostAllowed("", true)) << "a request without Host is not a browser's";
}

TEST(HttpPolicyTest, HostIsNotCheckedBeyondLoopback) {
  // Bound to every interface the server has no way to know its own names;
  // the token protects it there.
  for (const char* h : {"evil.example", "127.evil.example", "10.0.0.1:8080"}) {
    EXPECT_TRUE(HostAllowed(h, false)) << h;
  }
}

TEST(HttpPolicyTest, LoopbackOriginsOnLoopbackBind) {
  for (const char* scheme : {"http://", "https://"}) {
    for (const char* h : kLoopbackHosts) {
      std::string o = std::string(scheme) + h;
      EXPECT_TRUE(OriginAllowed(o, "", true)) << o;
    }
    for (const char* h : kLookAlikeHosts) {
      std::string o = std::string(scheme) + h;
      EXPECT_FALSE(OriginAllowed(o, "", true)) << o;
    }
  }
  for (const char* o :
       {"null", "file://", "ftp://localhost", "ws://localhost:8080", "localhost:8080",
        "http://localhost/", "http://localhost:8080/mcp", "HTTP://localhost",
        "http://user@localhost", "http:/localhost", "//localhost"}) {
    EXPECT_FALSE(OriginAllowed(o, "", true)) << o;
  }
  EXPECT_TRUE(OriginAllowed("", "", true)) << "no Origin: not a browser";
}

TEST(HttpPolicyTest, OriginsBeyondLoopbackNeedAList) {
  EXPECT_FALSE(OriginAllowed("http://localhost:8080", "", false));
  EXPECT_FALSE(OriginAllowed("https://app.example", "", false));
  EXPECT_TRUE(OriginAllowed("", "", false));
}

TEST(HttpPolicyTest, AllowedOriginsListIsExact) {
  const std::string list = "https://app.example, https://other.example:8443 ,http://127.0.0.1:3000";
  for (bool loopback : {true, false}) {
    EXPECT_TRUE(OriginAllowed("https://app.example", list, loopback));
    EXPECT_TRUE(OriginAllowed("https://other.example:8443", list, loopback));
    EXPECT_TRUE(OriginAllowed("http://127.0.0.1:3000", list, loopback));
    // A list replaces the loopback default, and matches whole values only.
    for (const char* o :
         {"http://localhost:8080", "http://127.0.0.1:3001", "https://app.example.evil",
          "https://app.example:443", "http://app.example", "https://other.example",
          "https://evil.example", "null", " https://app.example"}) {
      EXPECT_FALSE(OriginAllowed(o, list, loopback)) << o;
    }
  }
  EXPECT_TRUE(OriginAllowed("https://anything.example", "*", false));
  EXPECT_TRUE(OriginAllowed("https://anything.example", "https://a.example,*", true));
}

TEST(HttpPolicyTest, ParseAddrDecidesLoopbackByTheSameRule) {
  struct Case {
    const char* addr;
    const char* host;
    int port;
    bool loopback;
  };
  const Case cases[] = {
      {"127.0.0.1:8080", "127.0.0.1", 8080, true},
      {"127.10.20.30:1", "127.10.20.30", 1, true},
      {"localhost:8080", "localhost", 8080, true},
      {"[::1]:8080", "::1", 8080, true},
      {":8080", "", 8080, false},
      {"0.0.0.0:8080", "0.0.0.0", 8080, false},
      {"[::]:8080", "::", 8080, false},
      {"10.0.0.1:80", "10.0.0.1", 80, false},
      {"127.evil.example:8080", "127.evil.example", 8080, false},
      {"127.0.0.1.nip.io:8080", "127.0.0.1.nip.io", 8080, false},
      {"127.1:8080", "127.1", 8080, false},
      {"127.0.0.1evil:8080", "127.0.0.1evil", 8080, false},
      {"localhost.:8080", "localhost.", 8080, false},
  };
  for (const Case& c : cases) {
    Listen l = ParseAddr(c.addr);
    EXPECT_EQ(l.host, c.host) << c.addr;
    EXPECT_EQ(l.port, c.port) << c.addr;
    EXPECT_EQ(l.loopback, c.loopback) << c.addr;
  }
}

TEST(HttpPolicyTest, TokenMatchesOnlyTheWholeToken) {
  EXPECT_TRUE(TokenMatches("s3cret-token", "s3cret-token"));
  EXPECT_FALSE(TokenMatches("s3cret-tokem", "s3cret-token"));
  EXPECT_FALSE(TokenMatches("S3cret-token", "s3cret-token"));
  EXPECT_FALSE(TokenMatches("s3cret", "s3cret-token"));
  EXPECT_FALSE(TokenMatches("s3cret-token-and-more", "s3cret-token"));
  EXPECT_FALSE(TokenMatches("", "s3cret-token"));
  EXPECT_FALSE(TokenMatches(std::string("s3cret-token\0", 13), "s3cret-token"));
  EXPECT_FALSE(TokenMatches("anything", ""));
  EXPECT_TRUE(TokenMatches("", ""));
}

// The contract's X-MCP-AUTH, or the Bearer header every MCP client can send.
TEST(HttpPolicyTest, TheTokenComesInEitherHeader) {
  const std::string t = "s3cret-token";
  EXPECT_TRUE(RequestHasToken(t, "", t));
  EXPECT_TRUE(RequestHasToken("", "Bearer s3cret-token", t));
  EXPECT_TRUE(RequestHasToken("", "bearer s3cret-token", t)) << "the scheme in any case";
  EXPECT_TRUE(RequestHasToken("", "Bearer  s3cret-token", t));
  EXPECT_TRUE(RequestHasToken("wrong", "Bearer s3cret-token", t));
  EXPECT_TRUE(RequestHasToken(t, "Bearer wrong", t));
  EXPECT_FALSE(RequestHasToken("", "s3cret-token", t)) << "no scheme";
  EXPECT_FALSE(RequestHasToken("", "Basic s3cret-token", t));
  EXPECT_FALSE(RequestHasToken("", "Bearer s3cret-tokem", t));
  EXPECT_FALSE(RequestHasToken("", "Bearer ", t));
  EXPECT_FALSE(RequestHasToken("", "Bearer", t));
  EXPECT_FALSE(RequestHasToken("", "", t));
}

// With upstreams: beyond loopback a token is needed; loopback needs none.
TEST(HttpPolicyTest, UpstreamsBeyondLoopbackNeedAToken) {
  for (const char* addr : {"127.0.0.1:8080", "localhost:9", "[::1]:8080"}) {
    EXPECT_EQ(UpstreamsExposure(addr, false), "") << addr;
  }
  for (const char* addr : {":8080", "0.0.0.0:8080", "[::]:8080", "10.0.0.1:80"}) {
    EXPECT_EQ(UpstreamsExposure(addr, true), "") << addr << ": a token guards it";
    const std::string why = UpstreamsExposure(addr, false);
    EXPECT_NE(why.find(std::string("listen on ") + addr), std::string::npos) << why;
    EXPECT_NE(why.find("Set MCP_EXEC_AUTH_TOKEN"), std::string::npos) << why;
  }
  EXPECT_NE(UpstreamsExposure(":8080", false).find(":8080 (every interface)"), std::string::npos);
  EXPECT_NE(UpstreamsExposure("10.0.0.1:80", false).find("MCP_EXEC_ADDR=127.0.0.1:80)"),
            std::string::npos);
}

}  // namespace
}  // namespace mcpexec::http_policy
