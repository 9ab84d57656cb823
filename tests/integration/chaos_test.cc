// Chaos: the server under the failures a deployment meets. The zygote or a
// spare runner killed with SIGKILL, the disk that holds
// MCP_EXEC_WORKDIR_ROOT full, SIGTERM and clients that vanish in the middle
// of calls on each transport, and garbage between valid calls on stdio.
// Every call in flight gets an answer, nothing of a run outlives it, and
// the server goes on serving.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "http_harness.h"
#include "server_process.h"

namespace mcpexec::testing {
namespace {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------
// /proc helpers beyond the harness's.

std::string ReadSmallFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

std::string CmdlineOf(pid_t pid) {
  std::string c = ReadSmallFile("/proc/" + std::to_string(pid) + "/cmdline");
  std::replace(c.begin(), c.end(), '\0', ' ');
  return c;
}

// The real uid of a process, or -1 once it is gone.
long UidOf(pid_t pid) {
  std::istringstream in(ReadSmallFile("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Uid:", 0) == 0) return std::stol(line.substr(4));
  }
  return -1;
}

// Every live process below root (not root itself), zombies excluded.
std::vector<pid_t> DescendantsOf(pid_t root) {
  std::vector<pid_t> out, frontier = {root};
  while (!frontier.empty()) {
    pid_t p = frontier.back();
    frontier.pop_back();
    for (pid_t c : ChildrenOf(p, false)) {
      out.push_back(c);
      frontier.push_back(c);
    }
  }
  return out;
}

// Children of parent that are zombies (exited, not reaped).
std::vector<pid_t> ZombieChildrenOf(pid_t parent) {
  std::vector<pid_t> all = ChildrenOf(parent, true), live = ChildrenOf(parent, false), out;
  for (pid_t c : all) {
    if (std::find(live.begin(), live.end(), c) == live.end()) out.push_back(c);
  }
  return out;
}

// What every process of a server's sandbox has in its command line: the
// zygote's arguments name the supervisor (NUL-separated in /proc).
std::string SupervisorArg(pid_t server) {
  std::string arg = "--supervisor=" + std::to_string(server);
  arg.push_back('\0');
  return arg;
}

// What is below a server besides its zygote and the zygote's spares: the
// spares are the zygote's live children (a run's init, or the runner itself
// without pid namespaces) and, under an init, the one runner it waits for,
// still the zygote's image. Anything else (a `sleep`, an orphan re-parented
// to the server, a second zygote) is a leftover.
std::vector<std::string> LeftoversBelow(pid_t server, pid_t zygote) {
  std::vector<std::string> out;
  std::vector<pid_t> spares = ChildrenOf(zygote, false);
  for (pid_t p : DescendantsOf(server)) {
    if (p == zygote) continue;
    std::string cmd = CmdlineOf(p);
    if (cmd.empty()) continue;  // gone meanwhile
    bool spare = std::find(spares.begin(), spares.end(), p) != spares.end();
    bool spare_runner = false;
    for (pid_t s : spares) {
      std::vector<pid_t> kids = ChildrenOf(s, false);
      if (std::find(kids.begin(), kids.end(), p) != kids.end()) spare_runner = true;
    }
    if ((spare || spare_runner) && cmd.find("__zygote") != std::string::npos &&
        ChildrenOf(p, false).size() <= (spare ? 1u : 0u)) {
      continue;
    }
    out.push_back(std::to_string(p) + " uid " + std::to_string(UidOf(p)) + ": " + cmd);
  }
  // Re-parented anywhere else (to init): still named after this server.
  for (pid_t p : PidsWithCmdlineContaining(SupervisorArg(server))) {
    std::vector<pid_t> below = DescendantsOf(server);
    if (std::find(below.begin(), below.end(), p) == below.end()) {
      out.push_back(std::to_string(p) + " outside the server's tree: " + CmdlineOf(p));
    }
  }
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

int64_t MillisSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

std::string TextOf(const json& result) {
  if (!result.contains("content") || result["content"].empty()) return "";
  return result["content"][0].value("text", "");
}

// A run that sleeps in a `sleep <marker>` child until it is ended; found by
// its command line.
json SleepArgs(const std::string& marker) {
  return {{"code", "import subprocess; subprocess.run(['sleep', '" + marker + "'])"},
          {"timeout_s", 120}};
}

// The answer to a call ended by the server's shutdown: its output so far
// with reason "shutdown", or a tool error saying the server is shutting down
// (a call still queued). Never nothing.
void ExpectShutdownAnswer(const json& m, const json& id) {
  ASSERT_TRUE(m.is_object()) << "no answer for " << id.dump();
  EXPECT_EQ(m.value("id", json()), id) << m.dump();
  ASSERT_TRUE(m.contains("result")) << m.dump();
  const json& r = m["result"];
  if (r.value("isError", false)) {
    EXPECT_NE(TextOf(r).find("shutting down"), std::string::npos) << m.dump();
  } else {
    const json sc = r.value("structuredContent", json::object());
    EXPECT_EQ(sc.value("reason", ""), "shutdown") << m.dump();
    EXPECT_EQ(sc.value("exit_code", 0), -1) << m.dump();
  }
}

// Our end of the pipe that is the server's fd 0 or 1 (the harness keeps it
// private), or -1.
int ClientEndOf(const ServerProcess& s, int server_fd) {
  char buf[128];
  std::string link = "/proc/" + std::to_string(s.pid()) + "/fd/" + std::to_string(server_fd);
  ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return -1;
  const std::string pipe(buf, static_cast<size_t>(n));
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int ours = -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d)) continue;
    std::string mine = "/proc/self/fd/" + std::string(e->d_name);
    ssize_t m = readlink(mine.c_str(), buf, sizeof buf - 1);
    if (m > 0 && std::string(buf, static_cast<size_t>(m)) == pipe) ours = atoi(e->d_name);
  }
  closedir(d);
  return ours;
}

// The client side of the server's stdout goes away (a client process that
// died): our read end of the pipe is replaced by /dev/null, so the pipe has
// no reader left and the fd number stays valid for the harness to close.
bool DropServerStdout(ServerProcess& s) {
  int ours = ClientEndOf(s, 1);
  if (ours < 0) return false;
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  bool ok = null >= 0 && dup2(null, ours) == ours;
  if (null >= 0) close(null);
  return ok;
}

// Bytes to the server's stdin as they are (SendRaw ends a line).
bool WriteStdin(ServerProcess& s, const std::string& bytes) {
  int fd = ClientEndOf(s, 0);
  size_t off = 0;
  while (fd >= 0 && off < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + off, bytes.size() - off);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return fd >= 0;
}

// ---------------------------------------------------------------------------
// Streamable HTTP, as a client on 127.0.0.1.

json CallRequest(const json& id, const json& arguments) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"name", "exec"}, {"arguments", arguments}}}};
}

// One fixture for every chaos test: a server (stdio or streamable HTTP) and,
// for the disk test, a small tmpfs of its own.
class ChaosTest : public HttpServerTest {
 protected:
  // One call; {status, message}.
  std::pair<int, json> Post(const std::string& sid, const json& req) {
    auto r = Client().Post("/mcp", Session(sid), req.dump(), "application/json");
    if (!r) return {0, json()};
    return {r->status, r->status == 200 ? Message(r->body) : json()};
  }
  // A call on a raw connection, left open: returns the socket.
  int RawCall(const std::string& sid, const json& req) {
    int fd = ConnectRaw();
    if (fd < 0) return -1;
    std::string body = req.dump();
    std::string http =
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMcp-Session-Id: " +
        sid + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (!SendAll(fd, http)) {
      close(fd);
      return -1;
    }
    return fd;
  }
  // A fresh directory with an 8 MiB tmpfs of few inodes on it, so that both
  // can run out; "" or why it cannot be had.
  std::string MountDisk() {
    char tmpl[] = "/tmp/mcp-exec-chaos-disk-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return std::string("mkdtemp: ") + strerror(errno);
    dir_ = tmpl;
    if (mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
              "size=8m,nr_inodes=512,mode=0755") != 0) {
      return std::string("cannot mount a tmpfs here (mount -t tmpfs -o size=8m): ") +
             strerror(errno);
    }
    mounted_ = true;
    return "";
  }
  // Writes 64 KiB blocks to path until the disk refuses; the errno then.
  static int FillBlocks(const std::string& path) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return errno;
    std::string block(65536, 'f');
    int err = 0;
    for (int i = 0; i < 100000; ++i) {
      if (write(fd, block.data(), block.size()) < 0) {
        err = errno;
        break;
      }
    }
    close(fd);
    return err;
  }
  // Creates empty files in dir until no inode is left; the errno then.
  int FillInodes(const std::string& dir) {
    for (int i = 0; i < 100000; ++i) {
      std::string p = dir + "/i" + std::to_string(i);
      int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return errno;
      close(fd);
      ++inodes_;
    }
    return 0;
  }
  // The run directories below the server's folder in the root.
  std::vector<std::string> RunDirs() {
    std::vector<std::string> out;
    DIR* root = opendir(dir_.c_str());
    if (!root) return out;
    while (dirent* e = readdir(root)) {
      std::string name = e->d_name;
      if (name.rfind("mcp-exec-", 0) != 0 || name.rfind("mcp-exec-cache", 0) == 0) continue;
      DIR* base = opendir((dir_ + "/" + name).c_str());
      while (base && (e = readdir(base))) {
        if (e->d_name[0] != '.') out.push_back(name + "/" + e->d_name);
      }
      if (base) closedir(base);
    }
    closedir(root);
    return out;
  }
  // Waits up to ms for the server to remove every run directory; the ones
  // still there then, joined ("" when none).
  std::string RunDirsLeftAfter(int ms) {
    std::vector<std::string> dirs;
    WaitUntil(
        [&] {
          dirs = RunDirs();
          return dirs.empty();
        },
        ms);
    return Join(dirs);
  }

  void TearDown() override {
    HttpServerTest::TearDown();
    server_.reset();
    if (mounted_ && umount2(dir_.c_str(), 0) != 0) {
      EXPECT_EQ(umount2(dir_.c_str(), MNT_DETACH), 0) << strerror(errno);
    }
    if (!dir_.empty()) {
      EXPECT_EQ(rmdir(dir_.c_str()), 0) << dir_ << ": " << strerror(errno);
    }
  }

  std::string dir_;
  bool mounted_ = false;
  int inodes_ = 0;
};

// ---------------------------------------------------------------------------
// 1. The zygote killed with SIGKILL while runs are going and more wait.

TEST_F(ChaosTest, ZygoteKilledUnderLoad) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_CONCURRENT", "4"}});
  s.Initialize();
  ASSERT_EQ(s.Exec("print('warm')")["stdout"], "warm\n");
  const pid_t zygote = s.ZygotePid();
  ASSERT_GT(zygote, 0);
  // Four runs hold every slot; three more wait in the queue.
  std::vector<std::string> markers;
  for (int i = 0; i < 4; ++i) {
    markers.push_back(s.StartSleepingRun(10 + i, "5100"));
    ASSERT_FALSE(markers.back().empty()) << "run " << i << " never started\n" << s.Stderr();
  }
  for (int i = 0; i < 3; ++i) {
    s.SendCall(20 + i, {{"code", "print('queued " + std::to_string(i) + "')"}});
  }
  // The reader handles lines in order: once ping is answered, the queued
  // calls were accepted.
  ASSERT_EQ(s.Request("ping", json::object())["result"], json::object());

  const auto killed_at = Clock::now();
  ASSERT_EQ(kill(zygote, SIGKILL), 0);
  // Every run that was at the zygote gets a tool error saying what happened.
  for (int i = 0; i < 4; ++i) {
    json m = s.WaitForId(10 + i, 30000);
    ASSERT_TRUE(m.contains("result")) << m.dump();
    EXPECT_EQ(m["result"].value("isError", false), true) << m.dump();
    std::string text = TextOf(m["result"]);
    EXPECT_NE(text.find("sandbox process died"), std::string::npos) << text;
    EXPECT_NE(text.find("lost"), std::string::npos) << text;
  }
  // The issue's bound: once the sandbox is back (zygote_restarted), the next
  // call succeeds within 1 s of being sent, while the queued calls run too.
  ASSERT_TRUE(WaitUntil(
      [&] { return s.Stderr().find("\"event\":\"zygote_restarted\"") != std::string::npos; },
      60000))
      << s.Stderr();
  const int64_t restart_ms = MillisSince(killed_at);
  const auto sent_at = Clock::now();
  s.SendCall(30, {{"code", "print('after restart')"}});
  json next = s.WaitForId(30, 30000);
  const int64_t next_ms = MillisSince(sent_at);
  RecordProperty("zygote_restart_ms", std::to_string(restart_ms));
  RecordProperty("next_call_ms", std::to_string(next_ms));
  printf("zygote restart: %lld ms after the kill; the next call answered in %lld ms\n",
         static_cast<long long>(restart_ms), static_cast<long long>(next_ms));
  ASSERT_TRUE(next.contains("result")) << next.dump();
  EXPECT_FALSE(next["result"].value("isError", false)) << next.dump();
  EXPECT_EQ(next["result"]["structuredContent"]["stdout"], "after restart\n");
  // The queued calls never reached the dead zygote: they ran on the new one.
  for (int i = 0; i < 3; ++i) {
    json m = s.WaitForId(20 + i, 60000);
    ASSERT_TRUE(m.contains("result")) << m.dump();
    EXPECT_FALSE(m["result"].value("isError", false)) << m.dump();
    EXPECT_EQ(m["result"]["structuredContent"]["stdout"], "queued " + std::to_string(i) + "\n");
  }
  // The issue's bound, 1 s, holds on an idle machine; beside other tests the
  // margin comes from this machine's speed now: the same call, sent once the
  // queue has drained, times three. A first call that waited for the
  // restart's aftermath (spares, a backoff) takes several times longer.
  const auto steady_at = Clock::now();
  json steady = s.Call({{"code", "print('after restart')"}});
  const int64_t steady_ms = MillisSince(steady_at);
  EXPECT_FALSE(steady.value("isError", false)) << steady.dump();
  EXPECT_LT(next_ms, std::max<int64_t>(1000, 3 * steady_ms))
      << "the first call sent after the restart, against " << steady_ms
      << " ms for the same call once the queue drained";

  // Nothing is left of the killed runs, nor of the dead zygote's spares.
  for (const auto& m : markers) {
    EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdlineContaining(m).empty(); }, 5000)) << m;
  }
  EXPECT_FALSE(ProcessExists(zygote));
  const pid_t fresh = s.ZygotePid();
  EXPECT_GT(fresh, 0);
  EXPECT_NE(fresh, zygote);
  std::vector<std::string> left;
  EXPECT_TRUE(WaitUntil(
      [&] {
        left = LeftoversBelow(s.pid(), fresh);
        return left.empty() && ChildrenOf(fresh, false).size() == 4;
      },
      10000))
      << "left: " << Join(left) << "spares: " << ChildrenOf(fresh, false).size();
  // Processes of the sandbox uid below the server are the new spares' only.
  for (pid_t p : DescendantsOf(s.pid())) {
    if (UidOf(p) != static_cast<long>(s.sandbox_uid()) || p == fresh) continue;
    EXPECT_NE(CmdlineOf(p).find("__zygote"), std::string::npos) << p << ": " << CmdlineOf(p);
  }
  std::string log = s.Stderr();
  EXPECT_NE(log.find("\"event\":\"zygote_died\""), std::string::npos);
  EXPECT_EQ(s.Exec("print(6 * 7)")["stdout"], "42\n");
  s.CloseStdin();
  EXPECT_EQ(s.Wait(15000), 0);
  EXPECT_FALSE(ProcessExists(fresh));
}

// ---------------------------------------------------------------------------
// 2. Spare runners killed while they wait for work.

// Issue 20, point 1: a run's message to the zygote was sent on the control
// socket's number read earlier under the lock; a zygote that died in between
// had that socket closed, and the number could name another file by the
// time of the send (a new zygote's socket, a client's connection): the run
// and its descriptors went there. The preloaded shim holds every send that
// carries descriptors for 300 ms and reports a descriptor closed or reused
// under it; the zygote is killed inside that window, round after round.
TEST(SendRaceTest, ARunSentAsTheZygoteDiesGoesThroughNoOtherDescriptor) {
  // A server built with the sanitizers (scripts/sanitize.sh) loads its
  // runtime from a library, which must otherwise come first.
  ServerProcess s(Env{{"LD_PRELOAD", SEND_CHECK_SHIM},
                      {"SEND_CHECK_DELAY_MS", "300"},
                      {"ASAN_OPTIONS", "verify_asan_link_order=0"}});
  s.Initialize();
  ASSERT_EQ(s.Exec("print('warm')")["stdout"], "warm\n");
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const pid_t zygote = s.ZygotePid();
    ASSERT_GT(zygote, 0);
    const json id = s.NextId();
    const auto sent = Clock::now();
    s.SendCall(id, {{"code", "print('ran')"}});
    usleep(100 * 1000);  // the send is held in the shim
    ASSERT_EQ(kill(zygote, SIGKILL), 0);
    // Answered: run by the next zygote (the message never reached the dead
    // one), or a tool error that names the sandbox.
    json m = s.WaitForId(id, 60000);
    EXPECT_GE(Clock::now() - sent, std::chrono::milliseconds(300)) << "the shim held no send";
    ASSERT_TRUE(m.contains("result")) << m.dump();
    if (m["result"].value("isError", false)) {
      EXPECT_NE(m.dump().find("sandbox"), std::string::npos) << m.dump();
    } else {
      EXPECT_EQ(m["result"]["structuredContent"]["stdout"], "ran\n") << m.dump();
    }
    ASSERT_TRUE(WaitUntil([&] { return s.ZygotePid() > 0 && s.ZygotePid() != zygote; }, 30000));
    EXPECT_EQ(s.Exec("print('after')")["stdout"], "after\n");
  }
  EXPECT_EQ(s.Stderr().find("send_check:"), std::string::npos) << s.Stderr();
}

TEST_F(ChaosTest, SpareKilled) {
  constexpr size_t kSpares = 3;  // one per concurrent run, at most 4
  ServerProcess s(Env{{"MCP_EXEC_MAX_CONCURRENT", std::to_string(kSpares)}});
  s.Initialize();
  ASSERT_EQ(s.Exec("print('warm')")["stdout"], "warm\n");
  const pid_t zygote = s.ZygotePid();
  ASSERT_GT(zygote, 0);
  // The zygote's live children are its spares once every call's run is torn
  // down (a run's line is logged then): a finished run's init may still be
  // exiting just after its answer, the spare it used not yet replaced.
  auto runs_torn_down = [&](int runs) {
    return WaitUntil(
        [&] {
          const std::string log = s.Stderr();
          int n = 0;
          for (size_t at = log.find("\"event\":\"run\""); at != std::string::npos;
               at = log.find("\"event\":\"run\"", at + 1)) {
            ++n;
          }
          return n >= runs;
        },
        10000);
  };
  ASSERT_TRUE(runs_torn_down(1));
  ASSERT_TRUE(WaitUntil([&] { return ChildrenOf(zygote, false).size() == kSpares; }, 10000))
      << ChildrenOf(zygote, false).size();

  for (int round = 0; round < 2; ++round) {
    std::vector<pid_t> spares = ChildrenOf(zygote, false);
    ASSERT_EQ(spares.size(), kSpares);
    // Round 0: one spare's runner (under its init, when runs have a pid
    // namespace) and another spare whole; round 1: every spare at once.
    std::vector<pid_t> victims;
    if (round == 0) {
      std::vector<pid_t> inner = ChildrenOf(spares[0], false);
      victims.push_back(inner.empty() ? spares[0] : inner[0]);
      victims.push_back(spares[1]);
    } else {
      victims = spares;
    }
    for (pid_t v : victims) ASSERT_EQ(kill(v, SIGKILL), 0) << v;
    // Reaped, not zombies: the zygote noticed.
    for (pid_t v : victims) {
      EXPECT_TRUE(WaitUntil([&] { return !ProcessExists(v); }, 10000)) << "spare " << v;
    }
    // Replaced without any call arriving: a quiet server keeps its spares.
    EXPECT_TRUE(WaitUntil(
        [&] {
          std::vector<pid_t> now = ChildrenOf(zygote, false);
          if (now.size() != kSpares) return false;
          for (pid_t v : victims) {
            if (std::find(now.begin(), now.end(), v) != now.end()) return false;
          }
          return true;
        },
        5000))
        << "round " << round << ": the spares were not replaced while the server was idle";
    // Calls go on, several in a row and a few at once.
    for (int i = 0; i < 6; ++i) {
      json r = s.Exec("print(" + std::to_string(round * 100 + i) + ")");
      EXPECT_EQ(r["stdout"], std::to_string(round * 100 + i) + "\n") << r.dump();
      EXPECT_EQ(r["exit_code"], 0);
    }
    for (int i = 0; i < 3; ++i) s.SendCall(500 + round * 10 + i, {{"code", "print('x')"}});
    for (int i = 0; i < 3; ++i) {
      json m = s.WaitForId(500 + round * 10 + i, 60000);
      EXPECT_EQ(m["result"]["structuredContent"]["stdout"], "x\n") << m.dump();
    }
    // The spares are back to the configured number, none of the dead ones
    // among them, and nothing is left unreaped.
    EXPECT_TRUE(runs_torn_down(1 + (round + 1) * 9));
    std::vector<pid_t> now;
    EXPECT_TRUE(WaitUntil(
        [&] {
          now = ChildrenOf(zygote, false);
          return now.size() == kSpares;
        },
        5000))
        << now.size() << " spares";
    for (pid_t v : victims) {
      EXPECT_EQ(std::find(now.begin(), now.end(), v), now.end()) << v;
    }
    // A run's init reports its runner's status before it exits itself: its
    // zombie may outlive the answer by a moment, never for long.
    std::vector<pid_t> zombies;
    EXPECT_TRUE(WaitUntil(
        [&] {
          zombies = ZombieChildrenOf(zygote);
          std::vector<pid_t> ours = ZombieChildrenOf(s.pid());
          zombies.insert(zombies.end(), ours.begin(), ours.end());
          return zombies.empty();
        },
        5000))
        << zombies.size() << " zombies";
    std::vector<std::string> left;
    EXPECT_TRUE(WaitUntil(
        [&] {
          left = LeftoversBelow(s.pid(), zygote);
          return left.empty();
        },
        5000))
        << Join(left);
  }
  EXPECT_EQ(s.ZygotePid(), zygote) << "a dead spare is no reason to restart the zygote";
  EXPECT_EQ(s.Stderr().find("zygote_died"), std::string::npos);
  s.CloseStdin();
  EXPECT_EQ(s.Wait(15000), 0);
}

// ---------------------------------------------------------------------------
// 3. The disk that holds MCP_EXEC_WORKDIR_ROOT fills up.

TEST_F(ChaosTest, WorkdirDiskFull) {
  const std::string why = MountDisk();
  if (!why.empty()) GTEST_SKIP() << why;
  server_ = std::make_unique<ServerProcess>(
      Env{{"MCP_EXEC_WORKDIR_ROOT", dir_}, {"MCP_EXEC_DISK_LIMIT_MB", "4"}});
  ServerProcess& s = *server_;
  s.Initialize();
  ASSERT_EQ(s.Exec("print('before')")["stdout"], "before\n") << s.Stderr();
  const pid_t zygote = s.ZygotePid();
  const std::string filler = dir_ + "/filler";
  ASSERT_EQ(mkdir(filler.c_str(), 0755), 0);

  // Every block taken from outside the server.
  ASSERT_EQ(FillBlocks(filler + "/blob"), ENOSPC);
  json r = s.Call({{"code", "print('blocks full')"}}, 60000);
  if (r.value("isError", false)) {
    EXPECT_NE(TextOf(r).find("No space left on device"), std::string::npos) << r.dump();
  } else {
    // Runs have a private tmpfs of their own where the host allows mounts:
    // what they write never lands on this disk.
    EXPECT_EQ(r["structuredContent"]["stdout"], "blocks full\n") << r.dump();
  }

  // Every inode too: no run directory can be made. A tool error that names
  // the problem, at once, and the server stays up. The server removes a
  // run's directory after its answer: wait for that first, or the inode it
  // frees later serves every following run (seen in a fresh-clone run).
  ASSERT_EQ(RunDirsLeftAfter(10000), "");
  ASSERT_EQ(FillInodes(filler), ENOSPC);
  for (int i = 0; i < 3; ++i) {
    r = s.Call({{"code", "print('inodes full')"}}, 60000);
    EXPECT_TRUE(r.value("isError", false)) << r.dump();
    EXPECT_NE(TextOf(r).find("No space left on device"), std::string::npos) << r.dump();
  }
  EXPECT_EQ(s.Request("ping", json::object())["result"], json::object());
  EXPECT_TRUE(ProcessExists(s.pid()));
  EXPECT_EQ(s.ZygotePid(), zygote);

  // Space back: the next call succeeds.
  for (int i = 0; i < inodes_; ++i) unlink((filler + "/i" + std::to_string(i)).c_str());
  ASSERT_EQ(unlink((filler + "/blob").c_str()), 0);
  ASSERT_EQ(rmdir(filler.c_str()), 0);
  EXPECT_EQ(s.Exec("print('freed')")["stdout"], "freed\n");

  // A run that writes until its own disk limit (4 MiB) hears ENOSPC, and
  // the next run starts clean.
  r = s.Exec(
      "n = 0\n"
      "try:\n"
      "    while n < 100:\n"
      "        with open(f'fill{n}', 'wb') as f:\n"
      "            f.write(b'x' * (1 << 20))\n"
      "        n += 1\n"
      "except OSError as e:\n"
      "    print('full', n, e.errno)\n");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_TRUE(std::regex_match(r["stdout"].get<std::string>(), std::regex("full [0-9]+ 28\n")))
      << r.dump();
  EXPECT_EQ(s.Exec("import os; print(sorted(os.listdir('.')))")["stdout"], "['out']\n");
  // The runs' directories were all removed, the failed ones' included.
  EXPECT_EQ(RunDirsLeftAfter(5000), "");
  EXPECT_TRUE(ProcessExists(s.pid()));
  s.CloseStdin();
  EXPECT_EQ(s.Wait(15000), 0);
}

// ---------------------------------------------------------------------------
// 4. SIGTERM with calls in flight.

// stdio: the server ends its calls as soon as the signal arrives (ServeStdio
// applies no grace period; MCP_EXEC_SHUTDOWN_GRACE_S is the HTTP
// transports'); every call in flight is answered, the running ones with
// their output so far, the queued ones with a tool error.
TEST_F(ChaosTest, SigtermUnderLoadStdio) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_CONCURRENT", "4"}});
  s.Initialize();
  ASSERT_EQ(s.Exec("print('warm')")["stdout"], "warm\n");
  const pid_t zygote = s.ZygotePid();
  std::vector<std::string> markers;
  for (int i = 0; i < 4; ++i) {
    markers.push_back(s.StartSleepingRun(30 + i, "5200"));
    ASSERT_FALSE(markers.back().empty()) << s.Stderr();
  }
  for (int i = 0; i < 3; ++i) s.SendCall(40 + i, {{"code", "print('queued')"}});
  ASSERT_EQ(s.Request("ping", json::object())["result"], json::object());
  ASSERT_EQ(kill(s.pid(), SIGTERM), 0);
  for (int i = 0; i < 4; ++i) {
    json m = s.WaitForId(30 + i, 30000);
    ExpectShutdownAnswer(m, 30 + i);
    EXPECT_FALSE(m["result"].value("isError", false)) << "a running call returns its output";
  }
  for (int i = 0; i < 3; ++i) {
    json m = s.WaitForId(40 + i, 30000);
    ExpectShutdownAnswer(m, 40 + i);
    EXPECT_NE(TextOf(m["result"]).find("queued and did not run"), std::string::npos) << m.dump();
  }
  EXPECT_EQ(s.Wait(20000), 0);
  for (const auto& m : markers) EXPECT_TRUE(PidsWithCmdlineContaining(m).empty()) << m;
  EXPECT_FALSE(ProcessExists(zygote));
  EXPECT_TRUE(PidsWithCmdlineContaining(SupervisorArg(s.pid())).empty());
}

// Streamable HTTP: running calls may finish within the grace period; those
// still running after it are ended and answered; new work is refused
// meanwhile; exit 0 with nothing left.
TEST_F(ChaosTest, SigtermUnderLoadHttp) {
  Start({{"MCP_EXEC_MAX_CONCURRENT", "6"}, {"MCP_EXEC_SHUTDOWN_GRACE_S", "5"}});
  constexpr int kClients = 3;
  std::vector<std::string> sids;
  for (int i = 0; i < kClients; ++i) {
    sids.push_back(Initialize());
    ASSERT_FALSE(sids.back().empty());
  }
  // Per client: a call that sleeps for ever and one that ends in about a
  // second, each found by its `sleep` arguments (GNU sleep adds them up).
  std::vector<std::string> long_markers, short_markers;
  std::vector<std::pair<int, json>> long_answers(kClients), short_answers(kClients);
  std::vector<std::thread> callers;
  for (int i = 0; i < kClients; ++i) {
    long_markers.push_back("5300." + Marker(""));
    short_markers.push_back("0.000" + Marker(""));
  }
  for (int i = 0; i < kClients; ++i) {
    callers.emplace_back([&, i] {
      long_answers[i] = Post(sids[i], CallRequest(100 + i, SleepArgs(long_markers[i])));
    });
    callers.emplace_back([&, i] {
      std::string code = "import subprocess; subprocess.run(['sleep', '1', '" + short_markers[i] +
                         "']); print('finished " + std::to_string(i) + "')";
      short_answers[i] = Post(sids[i], CallRequest(200 + i, {{"code", code}, {"timeout_s", 60}}));
    });
  }
  // Every call has started (the short ones may be done already).
  std::set<std::string> seen;
  auto all_started = [&] {
    for (auto* ms : {&long_markers, &short_markers}) {
      for (const auto& m : *ms) {
        if (!PidsWithCmdlineContaining(m).empty()) seen.insert(m);
      }
    }
    return seen.size() == 2 * kClients;
  };
  bool running = WaitUntil(all_started, 20000);
  if (!running) {
    kill(server_->pid(), SIGKILL);
    for (auto& t : callers) t.join();
    FAIL() << "the calls never all ran\n" << server_->Stderr();
  }
  const pid_t zygote = server_->ZygotePid();
  ASSERT_EQ(kill(server_->pid(), SIGTERM), 0);
  // Draining: new work is refused.
  EXPECT_TRUE(WaitUntil(
      [&] {
        auto r = Client().Get("/readyz");
        return r && r->status == 503;
      },
      3000));
  auto refused = Post(sids[0], CallRequest(300, {{"code", "print('too late')"}}));
  EXPECT_EQ(refused.first, 503);
  EXPECT_EQ(server_->Wait(40000), 0) << server_->Stderr();
  for (auto& t : callers) t.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(short_answers[i].first, 200);
    json m = short_answers[i].second;
    EXPECT_EQ(m.value("id", json()), 200 + i) << m.dump();
    EXPECT_EQ(m["result"]["structuredContent"]["stdout"], "finished " + std::to_string(i) + "\n")
        << "a call that ends within the grace period finishes normally: " << m.dump();
    EXPECT_EQ(long_answers[i].first, 200);
    ExpectShutdownAnswer(long_answers[i].second, 100 + i);
  }
  for (auto* ms : {&long_markers, &short_markers}) {
    for (const auto& m : *ms) EXPECT_TRUE(PidsWithCmdlineContaining(m).empty()) << m;
  }
  EXPECT_FALSE(ProcessExists(zygote));
  EXPECT_TRUE(PidsWithCmdlineContaining(SupervisorArg(server_->pid())).empty());
}

// ---------------------------------------------------------------------------
// 5. The client goes away in the middle of calls.

// stdio: stdin closes with runs going and more queued. First a client that
// still reads (it gets every answer once MCP_EXEC_SHUTDOWN_GRACE_S has
// passed), then one gone altogether (stdout has no reader either: the
// server does not wait out its 20 s grace for nobody). Either way every
// run's processes end and exit is 0.
TEST_F(ChaosTest, ClientDisconnectsMidCallStdio) {
  for (bool stdout_gone : {false, true}) {
    SCOPED_TRACE(stdout_gone ? "stdin and stdout closed" : "stdin closed");
    Env env{{"MCP_EXEC_MAX_CONCURRENT", "4"}};
    if (!stdout_gone) env["MCP_EXEC_SHUTDOWN_GRACE_S"] = "1";
    ServerProcess s(env);
    s.Initialize();
    ASSERT_EQ(s.Exec("print('warm')")["stdout"], "warm\n");
    const pid_t zygote = s.ZygotePid();
    std::vector<std::string> markers;
    for (int i = 0; i < 3; ++i) {
      markers.push_back(s.StartSleepingRun(50 + i, "5400"));
      ASSERT_FALSE(markers.back().empty()) << s.Stderr();
    }
    // One run busy on the CPU (its `sleep` child shows it is going), and
    // three calls queued behind the four.
    markers.push_back("5400." + Marker(""));
    s.SendCall(53, {{"code", "import subprocess\nsubprocess.Popen(['sleep', '" + markers.back() +
                                 "'])\nwhile True: pass"},
                    {"timeout_s", 120}});
    ASSERT_TRUE(
        WaitUntil([&] { return !PidsWithCmdlineContaining(markers.back()).empty(); }, 20000));
    for (int i = 0; i < 3; ++i) s.SendCall(60 + i, {{"code", "print('queued')"}});
    ASSERT_EQ(s.Request("ping", json::object())["result"], json::object());
    if (stdout_gone) {
      ASSERT_TRUE(DropServerStdout(s));
    }
    s.CloseStdin();
    EXPECT_EQ(s.Wait(stdout_gone ? 12000 : 20000), 0) << s.Stderr();
    if (stdout_gone) {
      EXPECT_TRUE(s.StderrHas("stdout closed")) << s.Stderr();
    }
    if (!stdout_gone) {
      // A client still reading gets every answer: the running calls their
      // output so far, the queued ones a tool error.
      for (int i = 0; i < 4; ++i) {
        json m = s.WaitForId(50 + i, 5000);
        ExpectShutdownAnswer(m, 50 + i);
        EXPECT_FALSE(m["result"].value("isError", false)) << m.dump();
      }
      for (int i = 0; i < 3; ++i) {
        json m = s.WaitForId(60 + i, 5000);
        ExpectShutdownAnswer(m, 60 + i);
        EXPECT_NE(TextOf(m["result"]).find("queued and did not run"), std::string::npos)
            << m.dump();
      }
    }
    for (const auto& m : markers) EXPECT_TRUE(PidsWithCmdlineContaining(m).empty()) << m;
    EXPECT_FALSE(ProcessExists(zygote));
    EXPECT_TRUE(PidsWithCmdlineContaining(SupervisorArg(s.pid())).empty());
    EXPECT_TRUE(s.StderrHas("\"reason\":\"eof\"")) << s.Stderr();
  }
}

// Streamable HTTP: several clients hang up while their calls run. Their
// runs are killed (counted as cancelled), and the server serves on: a new
// client, and the sessions of the ones that left.
TEST_F(ChaosTest, ClientDisconnectsMidCallHttp) {
  Start({{"MCP_EXEC_MAX_CONCURRENT", "4"}});
  constexpr int kClients = 4;
  std::vector<std::string> sids, markers;
  std::vector<int> fds;
  for (int i = 0; i < kClients; ++i) {
    sids.push_back(Initialize());
    ASSERT_FALSE(sids.back().empty());
    markers.push_back("5500." + Marker(""));
    fds.push_back(RawCall(sids[i], CallRequest(400 + i, SleepArgs(markers[i]))));
    ASSERT_GE(fds.back(), 0);
  }
  for (const auto& m : markers) {
    ASSERT_TRUE(WaitUntil([&] { return !PidsWithCmdlineContaining(m).empty(); }, 20000))
        << m << "\n"
        << server_->Stderr();
  }
  EXPECT_EQ(Metric("mcp_exec_runs_in_flight"), kClients);
  const long cancelled_before = Metric("mcp_exec_runs_total{outcome=\"cancelled\"}");
  for (int fd : fds) close(fd);
  for (const auto& m : markers) {
    EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdlineContaining(m).empty(); }, 10000))
        << "the run outlived its client: " << m;
  }
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Metric("mcp_exec_runs_total{outcome=\"cancelled\"}") == cancelled_before + kClients;
      },
      10000))
      << Metric("mcp_exec_runs_total{outcome=\"cancelled\"}");
  EXPECT_TRUE(WaitUntil([&] { return Metric("mcp_exec_runs_in_flight") == 0; }, 10000));
  int cancel_lines = 0;
  std::istringstream log(server_->Stderr());
  for (std::string line; std::getline(log, line);) {
    if (line.find("\"event\":\"cancel\"") != std::string::npos) ++cancel_lines;
  }
  EXPECT_EQ(cancel_lines, kClients);
  // Still serving: a new client, and a client that left, on its session.
  std::string fresh = Initialize();
  auto r = Post(fresh, CallRequest(7, {{"code", "print('still here')"}}));
  EXPECT_EQ(r.first, 200);
  EXPECT_EQ(r.second["result"]["structuredContent"]["stdout"], "still here\n") << r.second.dump();
  r = Post(sids[0], CallRequest(8, {{"code", "print('back again')"}}));
  EXPECT_EQ(r.second["result"]["structuredContent"]["stdout"], "back again\n") << r.second.dump();
  auto ready = Client().Get("/readyz");
  EXPECT_TRUE(ready && ready->status == 200);
}

// ---------------------------------------------------------------------------
// 6. Garbage between valid calls on stdio.

constexpr int64_t kGarbageCap = 262144;  // MCP_EXEC_MAX_REQUEST_BYTES of the test

// One garbage line and the answer JSON-RPC 2.0 requires for it: an error
// with this code and id, a result (a tool error or not), or nothing.
struct Garbage {
  std::string line;
  enum Kind { kNone, kError, kResult, kToolError } kind = kNone;
  int code = 0;
  json id;
  std::string message_has;
};

// Deterministic for a seed: the generator's raw output only (the standard
// fixes mt19937's sequence, not the distributions').
Garbage MakeGarbage(int n, std::mt19937& rng) {
  auto pick = [&](size_t k) { return static_cast<size_t>(rng() % k); };
  const std::string gid = "g" + std::to_string(n);
  const std::string qid = "\"" + gid + "\"";
  Garbage g;
  auto error = [&](int code, json id, std::string has = "") {
    g.kind = Garbage::kError;
    g.code = code;
    g.id = std::move(id);
    g.message_has = std::move(has);
  };
  switch (n % 16) {
    case 0: {  // random bytes, no newline; the first one starts no JSON value
      g.line.push_back(static_cast<char>(0x80 + pick(0x80)));
      for (size_t i = 0, len = pick(300); i < len; ++i) {
        char c = static_cast<char>(1 + pick(255));
        g.line.push_back(c == '\n' ? '\x01' : c);
      }
      if (n % 32 == 0) g.line[g.line.size() / 2] = '\0';
      error(-32700, nullptr, "parse error");
      break;
    }
    case 1: {  // a valid request cut short
      std::string whole = CallRequest(gid, {{"code", "print('cut')"}}).dump();
      g.line = whole.substr(0, 1 + pick(whole.size() - 2));
      error(-32700, nullptr, "parse error");
      break;
    }
    case 2: {  // JSON, but not an object
      const char* scalars[] = {"42", "\"a string\"", "null", "true", "-1.5e3", "\"\""};
      g.line = scalars[pick(6)];
      error(-32600, nullptr, "JSON object");
      break;
    }
    case 3: {  // batches, including one nested very deep
      const std::string arrays[] = {
          "[]", "[1,2,3]", "[{\"jsonrpc\":\"2.0\",\"id\":" + qid + ",\"method\":\"ping\"}]",
          std::string(20000, '[') + std::string(20000, ']')};
      const size_t which = pick(4);
      g.line = arrays[which];
      // The deep one is refused for its depth before it is read as a batch.
      error(-32600, nullptr, which == 3 ? "deeper than 64 levels" : "batch");
      break;
    }
    case 4: {  // objects that are no JSON-RPC 2.0
      if (pick(2) == 0) {
        g.line = "{\"hello\":\"world\",\"n\":" + std::to_string(n) + "}";
        error(-32600, nullptr, "jsonrpc");
      } else {
        g.line = "{\"jsonrpc\":\"1.0\",\"id\":" + qid + ",\"method\":\"ping\"}";
        error(-32600, gid, "jsonrpc");
      }
      break;
    }
    case 5: {  // invalid UTF-8 inside a string
      const char* bad[] = {"\xff", "\xc3\x28", "\xed\xa0\x80", "\xf8\x88\x80\x80\x80", "\xe2\x82"};
      g.line = "{\"jsonrpc\":\"2.0\",\"id\":" + qid + ",\"method\":\"ping\",\"params\":{\"s\":\"a" +
               bad[pick(5)] + "b\"}}";
      error(-32700, nullptr, "UTF-8");
      break;
    }
    case 6: {  // empty and blank lines: nothing to answer
      const char* blank[] = {"", " ", "\t\t", "\r", "   \r"};
      g.line = blank[pick(5)];
      break;
    }
    case 7: {  // valid JSON-RPC, unknown methods
      const char* methods[] = {"no/such/method", "tools/run", "prompts/list", "exec", ""};
      std::string m = methods[pick(5)];
      g.line = "{\"jsonrpc\":\"2.0\",\"id\":" + qid + ",\"method\":\"" + m + "\"}";
      error(-32601, gid, "method not found");
      break;
    }
    case 8: {  // notifications, a tools/call among them: never answered, never run
      const std::string notes[] = {
          R"({"jsonrpc":"2.0","method":"notifications/whatever"})",
          R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nobody"}})",
          R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}})",
          R"j({"jsonrpc":"2.0","method":"tools/call","params":{"name":"exec","arguments":{"code":"print('never')"}}})j"};
      g.line = notes[pick(4)];
      break;
    }
    case 9: {  // responses from the client: we asked nothing, nothing to say
      g.line = pick(2) == 0 ? "{\"jsonrpc\":\"2.0\",\"id\":" + qid + ",\"result\":{}}"
                            : "{\"jsonrpc\":\"2.0\",\"id\":" + qid +
                                  ",\"error\":{\"code\":-1,\"message\":\"no\"}}";
      break;
    }
    case 10: {  // ids JSON-RPC does not allow
      const char* ids[] = {"true", "1.5", "{\"a\":1}", "[1]", "null"};
      g.line = std::string("{\"jsonrpc\":\"2.0\",\"id\":") + ids[pick(5)] + ",\"method\":\"ping\"}";
      error(-32600, nullptr, "id must be");
      break;
    }
    case 11: {  // no method, or not a string
      g.line = pick(2) == 0 ? "{\"jsonrpc\":\"2.0\",\"id\":" + qid + "}"
                            : "{\"jsonrpc\":\"2.0\",\"id\":" + qid + ",\"method\":7}";
      error(-32600, gid, "method");
      break;
    }
    case 12: {  // params not an object
      g.line = "{\"jsonrpc\":\"2.0\",\"id\":" + qid + ",\"method\":\"tools/call\",\"params\":[1]}";
      error(-32602, gid, "params");
      break;
    }
    case 13: {  // tools/call that cannot be run
      switch (pick(4)) {
        case 0:
          g.line = json({{"jsonrpc", "2.0"},
                         {"id", gid},
                         {"method", "tools/call"},
                         {"params", {{"name", "bash"}, {"arguments", {{"code", "ls"}}}}}})
                       .dump();
          error(-32602, gid, "unknown tool");
          break;
        case 1:
          g.line = json({{"jsonrpc", "2.0"},
                         {"id", gid},
                         {"method", "tools/call"},
                         {"params", {{"name", "exec"}, {"arguments", 5}}}})
                       .dump();
          g.kind = Garbage::kToolError, g.id = gid, g.message_has = "arguments";
          break;
        case 2:
          g.line = CallRequest(gid, {{"code", ""}}).dump();
          g.kind = Garbage::kToolError, g.id = gid, g.message_has = "empty";
          break;
        default:
          g.line = CallRequest(gid, {{"code", "print(1)"}, {"bogus", 1}}).dump();
          g.kind = Garbage::kToolError, g.id = gid, g.message_has = "bogus";
          break;
      }
      break;
    }
    case 14: {  // huge, under the cap: a valid ping, padded
      std::string pad(100000 + pick(100000), 'p');
      g.line = "{\"jsonrpc\":\"2.0\",\"id\":" + qid +
               ",\"method\":\"ping\",\"params\":{\"pad\":\"" + pad + "\"}}";
      g.kind = Garbage::kResult;
      g.id = gid;
      break;
    }
    default: {  // huge, over the cap by more than one read: refused unread
      g.line.assign(static_cast<size_t>(kGarbageCap) + 70000 + pick(200000), ' ');
      for (char& c : g.line) c = static_cast<char>(' ' + pick(95));
      g.line[0] = '{';
      error(-32600, nullptr, std::to_string(kGarbageCap));
      break;
    }
  }
  return g;
}

void ExpectAnswer(const Garbage& g, const json& m, int n) {
  SCOPED_TRACE("garbage line " + std::to_string(n) + " (kind " + std::to_string(n % 16) + ")");
  EXPECT_EQ(m.value("jsonrpc", ""), "2.0") << m.dump();
  EXPECT_EQ(m.value("id", json("missing")), g.id) << m.dump();
  if (g.kind == Garbage::kError) {
    ASSERT_TRUE(m.contains("error")) << m.dump();
    EXPECT_EQ(m["error"].value("code", 0), g.code) << m.dump();
    EXPECT_NE(m["error"].value("message", "").find(g.message_has), std::string::npos) << m.dump();
  } else {
    ASSERT_TRUE(m.contains("result")) << m.dump();
    if (g.kind == Garbage::kResult) {
      EXPECT_EQ(m["result"], json::object()) << m.dump();
    } else {
      EXPECT_EQ(m["result"].value("isError", false), true) << m.dump();
      EXPECT_NE(TextOf(m["result"]).find(g.message_has), std::string::npos) << m.dump();
    }
  }
}

TEST_F(ChaosTest, GarbageLinesBetweenValidCallsStdio) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_REQUEST_BYTES", std::to_string(kGarbageCap)}});
  s.Initialize();
  for (int i = 0; i < 5; ++i) ASSERT_EQ(s.Exec("print(1)")["stdout"], "1\n");  // settle
  const pid_t zygote = s.ZygotePid();
  usleep(300000);
  const int fds_before = CountOpenFds(s.pid());
  std::mt19937 rng(20261201);
  constexpr int kGarbage = 500, kEvery = 10;
  int valid = 0, answered_garbage = 0;
  for (int n = 0; n < kGarbage; n += kEvery) {
    std::vector<Garbage> batch;
    for (int k = n; k < n + kEvery; ++k) {
      batch.push_back(MakeGarbage(k, rng));
      s.SendRaw(batch.back().line);
    }
    const int64_t id = 1000 + valid;
    const int64_t value = static_cast<int64_t>(rng() % 1000000);
    s.SendCall(id, {{"code", "x = " + std::to_string(value) + "\nprint(x * 3)"}});
    ++valid;
    // The garbage is answered in order, by the reader itself, before the
    // call's run ends; then the call.
    size_t next = 0;
    for (;;) {
      auto m = s.Receive(60000);
      ASSERT_TRUE(m) << "no answer to call " << id << " after garbage " << n << "\n" << s.Stderr();
      if (m->value("id", json()) == id) {
        ASSERT_TRUE(m->contains("result")) << m->dump();
        EXPECT_FALSE((*m)["result"].value("isError", false)) << m->dump();
        EXPECT_EQ((*m)["result"]["structuredContent"]["stdout"], std::to_string(value * 3) + "\n");
        break;
      }
      while (next < batch.size() && batch[next].kind == Garbage::kNone) ++next;
      ASSERT_LT(next, batch.size()) << "an answer to nothing: " << m->dump().substr(0, 500);
      ExpectAnswer(batch[next], *m, n + static_cast<int>(next));
      ++next;
      ++answered_garbage;
    }
    while (next < batch.size() && batch[next].kind == Garbage::kNone) ++next;
    ASSERT_EQ(next, batch.size()) << "garbage line " << n + static_cast<int>(next)
                                  << " was never answered";
  }
  RecordProperty("garbage_answered", std::to_string(answered_garbage));
  EXPECT_EQ(valid, kGarbage / kEvery);
  EXPECT_GT(answered_garbage, kGarbage / 2);
  // Alive, the same zygote, no fd more than before, and no garbage ran code:
  // one run line per valid call (and the five before).
  EXPECT_EQ(s.Request("ping", json::object())["result"], json::object());
  EXPECT_TRUE(ProcessExists(s.pid()));
  EXPECT_EQ(s.ZygotePid(), zygote);
  int fds_after = -1;
  EXPECT_TRUE(WaitUntil(
      [&] {
        fds_after = CountOpenFds(s.pid());
        return fds_after == fds_before;
      },
      5000))
      << "supervisor fds " << fds_before << " -> " << fds_after;
  s.CloseStdin();
  EXPECT_EQ(s.Wait(15000), 0);
  // Counted once the server has ended and its stderr is read to the end:
  // the harness reads it on a thread of its own, and the last run's line
  // can still be on its way when that run's answer has arrived.
  int runs = 0;
  std::istringstream log(s.Stderr());
  for (std::string line; std::getline(log, line);) {
    if (line.find("\"event\":\"run\"") != std::string::npos) ++runs;
  }
  EXPECT_EQ(runs, 5 + valid);
}

// A line just over MCP_EXEC_MAX_REQUEST_BYTES is refused like any longer
// one, however the pipe happens to deliver it: here its first part, under
// the cap, arrives first, then the rest with the newline.
TEST_F(ChaosTest, StdioLineJustOverTheCapIsRefused) {
  ServerProcess s(Env{{"MCP_EXEC_MAX_REQUEST_BYTES", std::to_string(kGarbageCap)}});
  s.Initialize();
  const std::string head = R"({"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":")";
  const std::string tail = "\"}}";
  const size_t total = static_cast<size_t>(kGarbageCap) + 1000;
  std::string line = head + std::string(total - head.size() - tail.size(), 'p') + tail;
  ASSERT_EQ(line.size(), total);
  const size_t first = static_cast<size_t>(kGarbageCap) - 100;
  ASSERT_TRUE(WriteStdin(s, line.substr(0, first)));
  usleep(300000);  // read by now: the server holds a partial line under the cap
  s.SendRaw(line.substr(first));
  auto m = s.Receive(30000);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["id"], nullptr) << m->dump();
  ASSERT_TRUE(m->contains("error")) << "a " << total << "-byte line was handled: " << m->dump();
  EXPECT_EQ((*m)["error"]["code"], -32600);
  EXPECT_NE((*m)["error"]["message"].get<std::string>().find(std::to_string(kGarbageCap)),
            std::string::npos);
  EXPECT_EQ(s.Request("ping", json::object())["result"], json::object());
}

}  // namespace
}  // namespace mcpexec::testing
