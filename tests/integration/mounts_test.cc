// Host folders in runs (MCP_EXEC_MOUNTS), through the built server over MCP,
// in the three postures: the user's data read with pandas, a write refused
// where it is read-only, a result that lands on the host's disk, a session
// that reads the folder over several calls, what the tool description says,
// and every bad value refused at start with its reason. The attacks on the
// mounts are escape snippets (tests/escape/fs_mount_*.py), which the whole
// escape suite runs beside.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "postures.h"
#include "server_process.h"

namespace mcpexec::testing {
namespace {

std::string ReadHostFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(MountsTest, DataInResultsOutAndASessionInEveryPosture) {
  if (auto why = PosturesMissing("the postures need root")) GTEST_SKIP() << *why;
  for (const char* posture : {"root", "container", "docker"}) {
    SCOPED_TRACE(posture);
    ServerProcess s(MountEnv(posture, "/data", "/results"), {}, Wrapper(posture));
    s.Initialize();
    // Where there is no mount namespace (docker), runs find each folder at
    // its host path, and the description says so.
    const bool bound = std::string(posture) != "docker";
    const std::string data = bound ? "/data" : kMountBase + "/data";
    const std::string results = bound ? "/results" : kMountBase + "/results";
    json tools = s.Request("tools/list", json::object());
    const std::string description = tools["result"]["tools"][0]["description"];
    EXPECT_NE(description.find("`" + data + "` (read-only): the user's files"), std::string::npos)
        << description;
    EXPECT_NE(description.find("`" + results +
                               "` (read-write): the user's files, and what you "
                               "write there lands on the user's disk"),
              std::string::npos)
        << description;

    const std::string name =
        "out-" + std::string(posture) + "-" + std::to_string(getpid()) + ".csv";
    json out = s.Exec(
        "import errno, pandas as pd\n"
        "df = pd.read_csv('" +
        data +
        "/rain.csv')\n"
        "print(df.shape, int(df.rain_mm.sum()))\n"
        "try:\n"
        "    open('" +
        data +
        "/rain.csv', 'a').write('x')\n"
        "except OSError as e:\n"
        "    print('refused', errno.errorcode[e.errno])\n"
        "df.groupby('city').rain_mm.sum().to_csv('" +
        results + "/" + name + "')\n");
    ASSERT_EQ(out["exit_code"], 0) << out.dump();
    int64_t total = 0;
    for (int i = 0; i < 2000; ++i) total += i % 97;
    EXPECT_EQ(out["stdout"], "(2000, 3) " + std::to_string(total) + "\nrefused EROFS\n")
        << out.dump();
    // The result is on the host's disk, whole.
    const std::string host_file = kMountBase + "/results/" + name;
    const std::string written = ReadHostFile(host_file);
    EXPECT_EQ(written.rfind("city,rain_mm\ncity0,", 0), 0u) << written;
    EXPECT_EQ(std::count(written.begin(), written.end(), '\n'), 41) << written;
    unlink(host_file.c_str());

    // A session reads the folder over several calls, and sees what the user
    // adds between them.
    json first = s.Exec("import pandas as pd\ndf = pd.read_csv('" + data + "/rain.csv')\nlen(df)",
                        {{"session", "data"}});
    EXPECT_EQ(first["result"], "2000") << first.dump();
    const std::string added = "added-" + std::to_string(getpid()) + ".txt";
    WriteFile(kMountBase + "/data/" + added, "new on the host\n");
    json second = s.Exec("print(open('" + data + "/" + added + "').read(), end='')\nlen(df)",
                         {{"session", "data"}});
    EXPECT_EQ(second["stdout"], "new on the host\n") << second.dump();
    EXPECT_EQ(second["result"], "2000") << second.dump();
    json third = s.Exec("import os\nsorted(os.listdir('" + data + "/sub'))", {{"session", "data"}});
    EXPECT_EQ(third["result"], "['note.txt']") << third.dump();
    EXPECT_EQ(third.value("session_new", true), false) << third.dump();
    unlink((kMountBase + "/data/" + added).c_str());
  }
}

// A host folder under /tmp: the zygote's minimal root is built on a tmpfs
// over /tmp, which hid the folder from the bind made after it.
TEST(MountsTest, AFolderUnderTmpIsBoundToo) {
  if (geteuid() != 0) GTEST_SKIP() << "the root posture needs root";
  char tmpl[] = "/tmp/mounts-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  chmod(dir.c_str(), 0755);
  WriteFile(dir + "/hello.txt", "hello from /tmp\n");
  {
    ServerProcess s({{"MCP_EXEC_MOUNTS", dir + ":/data"}});
    s.Initialize();
    json out = s.Exec("print(open('/data/hello.txt').read(), end='')");
    EXPECT_EQ(out["stdout"], "hello from /tmp\n") << out.dump() << s.Stderr();
  }
  unlink((dir + "/hello.txt").c_str());
  rmdir(dir.c_str());
}

// A file a run writes into a read-write folder is bounded like any other of
// its files (RLIMIT_FSIZE: MCP_EXEC_DISK_LIMIT_MB), and the result says so.
TEST(MountsTest, AWriteIntoTheHostFolderIsBoundedByTheFileSizeLimit) {
  if (geteuid() != 0) GTEST_SKIP() << "the root posture needs root";
  auto env = MountEnv("root", "/data", "/results");
  env["MCP_EXEC_DISK_LIMIT_MB"] = "4";
  ServerProcess s(env);
  s.Initialize();
  const std::string name = "big-" + std::to_string(getpid()) + ".bin";
  json out = s.Exec("with open('/results/" + name +
                    "', 'wb') as f:\n"
                    "    for _ in range(8):\n"
                    "        f.write(b'x' * (1 << 20))\n");
  EXPECT_NE(out["exit_code"], 0) << out.dump();
  EXPECT_EQ(out.value("reason", ""), "file_size") << out.dump();
  struct stat st {};
  ASSERT_EQ(stat((kMountBase + "/results/" + name).c_str(), &st), 0);
  EXPECT_LE(st.st_size, 4 << 20);
  unlink((kMountBase + "/results/" + name).c_str());
}

// Every bad value stops the server before it serves, with a line that names
// the variable and says what is wrong.
TEST(MountsTest, EveryBadValueIsRefusedAtStartWithItsReason) {
  PrepareMountFixture();
  const std::string data = kMountBase + "/data", results = kMountBase + "/results";
  const std::string self_dir =
      std::string(MCP_EXEC_BIN).substr(0, std::string(MCP_EXEC_BIN).rfind('/'));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/nonexistent-mcp-exec-folder:/data", "cannot be used (No such file or directory)"},
      {"relative/path:/data", "HOST_PATH must be an absolute path"},
      {data + ":data", "RUN_PATH must be an absolute path"},
      {data + ":/usr/data", "would sit on or under /usr"},
      {data + ":/etc", "would sit on or under /etc"},
      {data + ":/proc/x", "would sit on or under /proc"},
      {data + ":/dev/data", "would sit on or under /dev"},
      {data + ":/tmp/data", "would sit on or under /tmp"},
      {data + ":/", "RUN_PATH must not be /"},
      {data + ":/data," + results + ":/data:rw", "two mounts on one path (RUN_PATH /data twice)"},
      {data + ":/data," + results + ":/data/in:rw", "lies inside /data"},
      {"/usr/share:/share:rw", "rw on /usr/share, which overlaps /usr"},
      {self_dir + ":/server:rw", "the folder of the server's own binary"},
      {"/proc:/hostproc", "would show /proc of the host"},
      {data + ":/data:rx", "unknown mode \"rx\""},
      {data + ":/a/../etc", "must not hold \".\" or \"..\" components"},
      {"/:/host", "HOST_PATH / would show /proc of the host"},
      {"/tmp:/scratch", "holds MCP_EXEC_WORKDIR_ROOT /tmp"},
  };
  // Refused before the server looks at its posture, in each of them.
  std::vector<std::string> postures = {"root"};
  if (!PosturesMissing("")) postures = {"root", "container", "docker"};
  for (const std::string& posture : postures) {
    for (const auto& [value, reason] : cases) {
      SCOPED_TRACE(posture + ": " + value);
      ServerProcess s({{"MCP_EXEC_MOUNTS", value}}, {}, Wrapper(posture));
      EXPECT_EQ(s.Wait(30000), 1);
      const std::string log = s.Stderr();
      EXPECT_NE(log.find("MCP_EXEC_MOUNTS"), std::string::npos) << log;
      EXPECT_NE(log.find(reason), std::string::npos) << log;
    }
  }
  // The flag is named when the flag set it.
  ServerProcess flag({}, {"--mounts", data + ":/tmp/x"});
  EXPECT_EQ(flag.Wait(30000), 1);
  EXPECT_NE(flag.Stderr().find("--mounts"), std::string::npos) << flag.Stderr();
}

// rw on a folder the container mounted read-only (docker run -v ...:ro)
// cannot hold: the server says so at start instead of serving a folder that
// is not what the operator asked for.
TEST(MountsTest, RwOnAFolderTheContainerMountedReadOnlyStopsTheServer) {
  if (auto why = PosturesMissing("the postures need root")) GTEST_SKIP() << *why;
  PrepareMountFixture();
  const std::string results = kMountBase + "/results";
  for (const char* posture : {"container", "docker"}) {
    SCOPED_TRACE(posture);
    ServerProcess s({{"CONTAINER_POSTURE_VOLUMES", results + ":" + results + ":ro"},
                     {"MCP_EXEC_MOUNTS", results + ":" + results + ":rw"}},
                    {}, Wrapper(posture));
    EXPECT_NE(s.Wait(60000), 0);
    EXPECT_NE(s.Stderr().find("MCP_EXEC_MOUNTS: " + results +
                              " is read-only where the server runs (mounted read-only by the "
                              "host or the container), so it cannot be rw in runs"),
              std::string::npos)
        << s.Stderr();
  }
}

}  // namespace
}  // namespace mcpexec::testing
