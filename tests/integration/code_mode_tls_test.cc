// Issue 40, points 1 and 2: code mode over an https upstream, and secrets
// named by reference. The upstream is tests/upstreams/tls_upstream.py on
// 127.0.0.1, serving a certificate from a throwaway CA the test makes with
// the openssl command (tests/upstreams/make_test_ca.sh); the bearer token
// it demands reaches the server only as an environment variable the
// upstreams file names.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "server_process.h"
#include "test_binary.h"

namespace mcpexec::testing {
namespace {

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

const std::string kToken = "tls-token-5d1e8b2a";

// A folder of its own with the test CA, its certificates, and the
// upstreams files written beside them (a relative "ca" is read from there).
class Material {
 public:
  Material() {
    char dir[] = "/tmp/mcp-exec-tls-XXXXXX";
    EXPECT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    const std::string make = std::string(MCP_EXEC_UPSTREAMS_DIR) + "/make_test_ca.sh " + dir_ +
                             " >" + dir_ + "/make.log 2>&1";
    ok_ = system(make.c_str()) == 0;
    EXPECT_TRUE(ok_) << "make_test_ca.sh failed (is the openssl command installed?)";
  }
  ~Material() { system(("rm -rf " + dir_).c_str()); }
  const std::string& dir() const { return dir_; }
  bool ok() const { return ok_; }
  std::string Write(const std::string& name, const json& servers) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << json{{"mcpServers", servers}}.dump(2);
    return path;
  }

 private:
  std::string dir_;
  bool ok_ = false;
};

// tls_upstream.py serving `cert`, demanding "Bearer <kToken>"; its port is
// its first line of output.
class TlsUpstream {
 public:
  TlsUpstream(const Material& m, const std::string& cert,
              const std::map<std::string, std::string>& env = {}) {
    int out[2];
    EXPECT_EQ(pipe(out), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      int null_fd = open("/dev/null", O_WRONLY);
      dup2(null_fd, 2);
      close(out[0]);
      setenv("TLS_UPSTREAM_AUTH", ("Bearer " + kToken).c_str(), 1);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      const std::string script = std::string(MCP_EXEC_UPSTREAMS_DIR) + "/tls_upstream.py";
      const std::string c = m.dir() + "/" + cert + ".pem", k = m.dir() + "/" + cert + ".key";
      execl("/usr/bin/python3", "python3", script.c_str(), c.c_str(), k.c_str(), nullptr);
      _exit(127);
    }
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    if (fscanf(f, "%d", &port_) != 1) port_ = 0;
    fclose(f);
    EXPECT_GT(port_, 0) << "the TLS upstream did not start";
  }
  ~TlsUpstream() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  std::string Url(const std::string& host) const {
    return "https://" + host + ":" + std::to_string(port_) + "/mcp";
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

json Entry(const std::string& url, const char* ca) {
  json e = {{"url", url}, {"headers", {{"Authorization", "Bearer ${MCP_EXEC_TEST_TOKEN}"}}}};
  if (ca != nullptr) e["ca"] = ca;
  return e;
}

// The upstreams file most tests use: the one upstream, by name, with the
// test CA; and the server's environment with the token it names.
std::string OneUpstream(const Material& m, const TlsUpstream& up) {
  return m.Write("up.json", {{"tls", Entry(up.Url("localhost"), "ca.pem")}});
}

std::map<std::string, std::string> WithToken(const std::string& config,
                                             std::map<std::string, std::string> more = {}) {
  more["MCP_EXEC_UPSTREAMS"] = config;
  more["MCP_EXEC_TEST_TOKEN"] = kToken;
  return more;
}

// Over https with the entry's own CA, by name (SNI and the name checked)
// and by address; the token comes from the server's environment and is
// found nowhere a run, a result, the log or the description shows.
TEST(CodeModeTlsTest, AnHttpsUpstreamWithItsCaAndASecretByReference) {
  Material m;
  ASSERT_TRUE(m.ok());
  TlsUpstream up(m, "server");
  const std::string config = m.Write(
      "up.json", {{"byname", Entry(up.Url("localhost"), "ca.pem")},
                  {"byaddress", Entry(up.Url("127.0.0.1"), (m.dir() + "/ca.pem").c_str())}});
  ServerProcess s(WithToken(config));
  json init = s.Initialize();
  json r = s.Exec(
      "import mcp_tools, os, socket\n"
      "print(mcp_tools.byname.echo(message='over tls'))\n"
      "print(repr(mcp_tools.byname.sni()), repr(mcp_tools.byaddress.sni()))\n"
      "print(mcp_tools.byaddress.stats(values=[1, 2, 3])['mean'])\n"
      "print(mcp_tools.byname.whoami())\n"
      "print(sorted(k for k in os.environ if 'TOKEN' in k))\n"
      "try:\n"
      "    socket.create_connection(('127.0.0.1', " +
      std::to_string(up.port()) +
      "))\n    print('reached the upstream directly')\n"
      "except OSError as e:\n    print('no direct way', type(e).__name__)\n");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  // SNI carries a name, never an address (RFC 6066).
  EXPECT_EQ(r["stdout"],
            "Echo: over tls\n'localhost' ''\n2.0\nyou sent ***\n[]\nno direct way "
            "PermissionError\n")
      << r.dump();
  json tools = s.Request("tools/list", json::object());
  for (const std::string& shown : {r.dump(), tools.dump(), init.dump(), s.Stderr()}) {
    EXPECT_FALSE(Has(shown, kToken)) << shown;
  }
  EXPECT_TRUE(s.StderrHas("\"transport\":\"http\""));
}

struct Refusal {
  const char* what;
  std::string cert;    // what the upstream serves
  std::string host;    // how the entry names it
  const char* ca;      // the entry's "ca", or none: the system's store
  const char* needle;  // in the start's error
};

// Every certificate that does not prove the server stops the start, naming
// the upstream and why.
TEST(CodeModeTlsTest, ACertificateThatDoesNotProveTheServerStopsTheStart) {
  Material m;
  ASSERT_TRUE(m.ok());
  const Refusal cases[] = {
      {"another CA", "server", "127.0.0.1", "other-ca.pem", "unable to get local issuer"},
      {"the system's store", "server", "localhost", nullptr, "unable to get local issuer"},
      {"a name it was not made for", "wrong-name", "localhost", "ca.pem", "hostname mismatch"},
      {"an address it was not made for", "wrong-name", "127.0.0.1", "ca.pem",
       "IP address mismatch"},
  };
  for (const Refusal& c : cases) {
    TlsUpstream up(m, c.cert);
    const std::string config = m.Write("bad.json", {{"tls", Entry(up.Url(c.host), c.ca)}});
    ServerProcess s(WithToken(config));
    EXPECT_NE(s.Wait(60000), 0) << c.what;
    const std::string err = s.Stderr();
    EXPECT_TRUE(Has(err, "upstream 'tls' (url " + up.Url(c.host) + ") could not be started"))
        << c.what << "\n"
        << err;
    EXPECT_TRUE(Has(err, "its certificate was refused: ")) << c.what << "\n" << err;
    EXPECT_TRUE(Has(err, c.needle)) << c.what << ": " << c.needle << "\n" << err;
    EXPECT_FALSE(Has(err, kToken)) << err;
  }
}

// A connection whose answer was read whole carries the next calls (no
// TLS handshake each); one the server closed while it sat idle is replaced.
TEST(CodeModeTlsTest, ConnectionsAreKeptAndOneTheServerClosedIsReplaced) {
  Material m;
  ASSERT_TRUE(m.ok());
  TlsUpstream up(m, "server", {{"TLS_UPSTREAM_IDLE_S", "1"}});
  const std::string config = OneUpstream(m, up);
  ServerProcess s(WithToken(config));
  s.Initialize();
  json r = s.Exec(
      "import mcp_tools, time\n"
      "before = int(mcp_tools.tls.connections())\n"
      "for i in range(20):\n"
      "    assert mcp_tools.tls.echo(message=str(i)) == f'Echo: {i}'\n"
      "print(int(mcp_tools.tls.connections()) - before)\n"
      "time.sleep(2)\n"
      "print(mcp_tools.tls.echo(message='after the server closed it'))\n");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["stdout"], "0\nEcho: after the server closed it\n") << r.dump();
}

// A variable the file names but the server's environment lacks stops the
// start before anything is started, naming it; so does a "ca" that is not
// a certificate.
TEST(CodeModeTlsTest, AMissingVariableOrAnUnreadableCaStopsTheStart) {
  Material m;
  ASSERT_TRUE(m.ok());
  TlsUpstream up(m, "server");
  {
    const std::string config = OneUpstream(m, up);
    ServerProcess s({{"MCP_EXEC_UPSTREAMS", config}});
    EXPECT_NE(s.Wait(60000), 0);
    EXPECT_TRUE(Has(s.Stderr(),
                    "upstream 'tls': \"headers\".Authorization names the environment "
                    "variable MCP_EXEC_TEST_TOKEN, which is not set"))
        << s.Stderr();
  }
  {
    const std::string config =
        m.Write("up.json", {{"tls", Entry(up.Url("localhost"), "server.csr")}});
    ServerProcess s(WithToken(config));
    EXPECT_NE(s.Wait(60000), 0);
    EXPECT_TRUE(Has(s.Stderr(), "cannot use \"ca\" " + m.dir() + "/server.csr")) << s.Stderr();
  }
}

}  // namespace
}  // namespace mcpexec::testing

namespace mcpexec::testing {
namespace {

// Issue 40, point 3: nested calls of one run overlap, awaited together
// (top-level await, asyncio.run) or from threads, never more at once than
// MCP_EXEC_MAX_TOOL_CALLS_IN_FLIGHT; outside async code a call still gives
// its value. The upstream counts the waits in progress at once (peak()).
TEST(CodeModeParallelTest, CallsOverlapUpToTheCapAwaitedOrFromThreads) {
  Material m;
  ASSERT_TRUE(m.ok());
  TlsUpstream up(m, "server");
  const std::string config = OneUpstream(m, up);
  ServerProcess s(WithToken(config, {{"MCP_EXEC_MAX_TOOL_CALLS_IN_FLIGHT", "3"}}));
  s.Initialize();
  // Top-level await: nine calls, at most three at the upstream at once,
  // and more than one (they overlap). In a run that awaits, every call is
  // awaited (an event loop runs it).
  json r = s.Exec(
      "import asyncio, mcp_tools\n"
      "await mcp_tools.tls.peak()\n"
      "got = await asyncio.gather(*(mcp_tools.tls.wait(ms=300) for _ in range(9)))\n"
      "print(got.count('waited'), int(await mcp_tools.tls.peak()))\n");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  int n = 0, peak = 0;
  ASSERT_EQ(sscanf(r["stdout"].get<std::string>().c_str(), "%d %d", &n, &peak), 2) << r.dump();
  EXPECT_EQ(n, 9);
  EXPECT_GE(peak, 2) << r.dump();
  EXPECT_LE(peak, 3) << r.dump();
  EXPECT_EQ(r["tool_calls"], 11) << r.dump();

  // From threads, in a run with no await: the sync form, overlapping.
  json t = s.Exec(
      "import mcp_tools\n"
      "from concurrent.futures import ThreadPoolExecutor\n"
      "mcp_tools.tls.peak()\n"
      "with ThreadPoolExecutor(6) as pool:\n"
      "    got = list(pool.map(lambda _: mcp_tools.tls.wait(ms=300), range(6)))\n"
      "print(got.count('waited'), int(mcp_tools.tls.peak()))\n"
      "print(mcp_tools.tls.echo(message='sync'))\n");
  EXPECT_EQ(t["exit_code"], 0) << t.dump();
  ASSERT_EQ(sscanf(t["stdout"].get<std::string>().c_str(), "%d %d", &n, &peak), 2) << t.dump();
  EXPECT_EQ(n, 6);
  EXPECT_GE(peak, 2) << t.dump();
  EXPECT_LE(peak, 3) << t.dump();
  EXPECT_TRUE(Has(t["stdout"], "\nEcho: sync\n")) << t.dump();

  // asyncio.run in a one-shot run, and what an awaitable says when it is
  // used as a value.
  json a = s.Exec(
      "import asyncio, mcp_tools\n"
      "async def main():\n"
      "    pending = mcp_tools.call('tls', 'echo', {'message': 'x'})\n"
      "    print(repr(pending))\n"
      "    try:\n"
      "        pending['key']\n"
      "    except TypeError as e:\n"
      "        print(e)\n"
      "    print(await pending)\n"
      "    got = await asyncio.gather(*(mcp_tools.tls.wait(ms=300) for _ in range(4)))\n"
      "    print(got.count('waited'), int(await mcp_tools.tls.peak()))\n"
      "asyncio.run(main())\n");
  EXPECT_EQ(a["exit_code"], 0) << a.dump();
  const std::string aout = a["stdout"];
  const std::string said =
      "mcp_tools call mcp_tools.call, not awaited: inside async code a call returns an "
      "awaitable; write `await mcp_tools.call(...)`";
  EXPECT_TRUE(Has(aout, "<" + said + ">\n" + said + "\nEcho: x\n4 ")) << aout;
  EXPECT_FALSE(Has(aout, "4 1\n")) << "the four waits did not overlap: " << aout;

  // A session cell with top-level await, then a cell of plain calls.
  json first = s.Call({{"code",
                        "import asyncio, mcp_tools\n"
                        "got = await asyncio.gather(*(mcp_tools.tls.echo(message=str(i)) "
                        "for i in range(5)))\nprint(got)"},
                       {"session", "new"}});
  const json fs = first["structuredContent"];
  EXPECT_EQ(fs["stdout"], "['Echo: 0', 'Echo: 1', 'Echo: 2', 'Echo: 3', 'Echo: 4']\n")
      << first.dump();
  json second =
      s.Call({{"code", "print(mcp_tools.tls.echo(message='plain'))"}, {"session", fs["session"]}});
  EXPECT_EQ(second["structuredContent"]["stdout"], "Echo: plain\n") << second.dump();
  // A cell that ends with a call still in flight on a thread of its own:
  // its channel ends with it, and the next cell's channel works.
  json leaves = s.Call({{"code",
                         "import threading\n"
                         "threading.Thread(target=lambda: mcp_tools.tls.wait(ms=1000), "
                         "daemon=True).start()\n"},
                        {"session", fs["session"]}});
  EXPECT_EQ(leaves["structuredContent"]["exit_code"], 0) << leaves.dump();
  json after = s.Call({{"code",
                        "import time\ntime.sleep(1.5)\n"
                        "print(mcp_tools.tls.echo(message='next cell'))"},
                       {"session", fs["session"]}});
  EXPECT_EQ(after["structuredContent"]["stdout"], "Echo: next cell\n")
      << after["structuredContent"].dump();
}

}  // namespace
}  // namespace mcpexec::testing

namespace mcpexec::testing {
namespace {

std::string ExecDescription(ServerProcess& s) {
  const json listed = s.Request("tools/list", json::object());
  for (const json& t : listed["result"]["tools"]) {
    if (t["name"] == "exec") return t["description"];
  }
  return "";
}

// Issue 40, point 4: past MCP_EXEC_DESCRIBE_TOOLS_MAX tools the exec
// description names the servers with their counts and how to search;
// mcp_tools.search ranks the tools by their words.
TEST(CodeModeDiscoveryTest, PastTheMaxTheDescriptionNamesServersAndSearchFindsTools) {
  Material m;
  ASSERT_TRUE(m.ok());
  TlsUpstream up(m, "server", {{"TLS_UPSTREAM_TOOLS", "60"}});  // 8 of its own, and 60
  const std::string config = OneUpstream(m, up);
  ServerProcess s(WithToken(config));
  s.Initialize();
  const std::string description = ExecDescription(s);
  EXPECT_TRUE(Has(description, "\n- mcp_tools.tls (68 tools)\n68 tools in all")) << description;
  EXPECT_TRUE(Has(description, "print(mcp_tools.search('a few words'))")) << description;
  EXPECT_FALSE(Has(description, "tool_0001")) << description;
  json r = s.Exec(
      "import mcp_tools\n"
      "found = mcp_tools.search('invoices')\n"
      "print(len(found), found[0])\n"
      "print(len(mcp_tools.search('invoices', limit=3)))\n"
      "print([f['name'] for f in mcp_tools.search('echo message')][:2])\n"
      "print(len(mcp_tools.servers['tls']), 'tool_0059' in repr(mcp_tools.tls))\n"
      "try:\n"
      "    mcp_tools.search('  ')\n"
      "except ValueError as e:\n"
      "    print(e)\n");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["stdout"],
            "9 {'server': 'tls', 'name': 'tool_0000', 'description': 'Extra tool number 0: "
            "invoices.', 'call': 'mcp_tools.tls.tool_0000'}\n"
            "3\n"
            "['echo', 'whoami']\n"
            "68 True\n"
            "search needs at least one word, e.g. mcp_tools.search('issues')\n")
      << r.dump();

  // Up to the max every tool is named.
  ServerProcess all(WithToken(config, {{"MCP_EXEC_DESCRIBE_TOOLS_MAX", "100"}}));
  all.Initialize();
  const std::string every = ExecDescription(all);
  EXPECT_TRUE(Has(every, "- mcp_tools.tls (68 tools): echo, wait, whoami")) << every;
  EXPECT_TRUE(Has(every, "tool_0059")) << every;
}

// Issue 40, point 5: help() and __doc__ show what a tool returns from its
// outputSchema, a structured result is that dict, and a server that says
// its tool list changed is listed again for the runs after.
TEST(CodeModeDiscoveryTest, TypedReturnsAndAToolListThatChanges) {
  Material m;
  ASSERT_TRUE(m.ok());
  TlsUpstream up(m, "server");
  const std::string config = m.Write(
      "up.json", {{"tls", Entry(up.Url("localhost"), "ca.pem")},
                  {"tiny",
                   {{"command", "/usr/bin/python3"},
                    {"args", {std::string(MCP_EXEC_UPSTREAMS_DIR) + "/tiny_upstream.py"}}}}});
  ServerProcess s(WithToken(config));
  s.Initialize();
  json r = s.Exec(
      "import mcp_tools\n"
      "help(mcp_tools.tls.stats)\n"
      "print('Returns a dict' in mcp_tools.tls.stats.__doc__)\n"
      "v = mcp_tools.tls.stats(values=[2, 4])\n"
      "print(type(v).__name__, v['n'], v['mean'])\n"
      "print(mcp_tools.tls.grow(), mcp_tools.tiny.grow())\n");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  const std::string out = r["stdout"];
  EXPECT_TRUE(Has(out, "Returns a dict: {'mean': number, 'n': integer}.")) << out;
  EXPECT_TRUE(Has(out, "\nTrue\ndict 2 3.0\ngrown_0 grown_0\n")) << out;
  // The next run sees the new tools of both (an event stream's
  // notification over https, a line over stdio).
  json next = s.Exec(
      "import mcp_tools\n"
      "print(mcp_tools.tls.grown_0(), mcp_tools.tiny.grown_0())\n"
      "print('grown_0' in mcp_tools.servers['tls'], 'grown_0' in mcp_tools.servers['tiny'])\n");
  EXPECT_EQ(next["stdout"], "grown_0 grown_0\nTrue True\n") << next.dump();
  EXPECT_TRUE(s.StderrHas("\"event\":\"upstream_tools_changed\""));
}

}  // namespace
}  // namespace mcpexec::testing
