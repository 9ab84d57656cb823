#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <regex>
#include <string>
#include <thread>

#include "base/fs_util.h"
#include "resources/store.h"
#include "supervisor/results.h"
#include "tool/contract.h"

namespace mcpexec {
namespace {

using json = nlohmann::json;

class ResourceStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = MakePrivateDir("/tmp", "store-test-");
    ASSERT_FALSE(root_.empty());
  }
  void TearDown() override { RemoveTree(root_); }
  std::unique_ptr<ResourceStore> Make(int64_t max_bytes, int ttl_s = 60) {
    std::string error;
    auto store = ResourceStore::Create(root_, max_bytes, std::chrono::seconds(ttl_s), &error);
    EXPECT_TRUE(store) << error;
    return store;
  }
  // A resource of n bytes of `fill`, published as `name`; "" if refused.
  static std::string Put(ResourceStore& s, const std::string& name, size_t n, char fill = 'x') {
    auto w = s.Begin(static_cast<int64_t>(n));
    if (!w) return "";
    std::string data(n, fill);
    if (!w->Write(data.data(), data.size())) return "";
    return s.Commit(*w, name, "").value_or("");
  }
  static std::string Contents(ResourceStore& s, const std::string& uri) {
    auto found = s.Open(uri);
    if (!found) return "<none>";
    std::string data(static_cast<size_t>(found->first.size), '\0');
    EXPECT_EQ(pread(found->second.get(), data.data(), data.size(), 0),
              static_cast<ssize_t>(data.size()));
    return data;
  }
  int Entries() const {
    int n = 0;
    DIR* d = opendir(root_.c_str());
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
    return n;
  }
  std::string root_;
};

TEST_F(ResourceStoreTest, AUriIsUnguessableAndServesWhatWasWritten) {
  auto s = Make(1 << 20);
  std::string a = Put(*s, "out/a b.csv", 10, 'a');
  std::string b = Put(*s, "out/a b.csv", 10, 'b');
  EXPECT_TRUE(std::regex_match(a, std::regex("mcp-exec://resource/[0-9a-f]{32}/out/a%20b\\.csv")))
      << a;
  EXPECT_NE(a, b);
  EXPECT_EQ(Contents(*s, a), std::string(10, 'a'));
  EXPECT_EQ(Contents(*s, b), std::string(10, 'b'));
  // Only the URI handed out: not its id with another name, not a prefix.
  EXPECT_FALSE(s->Open(a.substr(0, a.rfind('/')) + "/other"));
  EXPECT_FALSE(s->Open(a.substr(0, a.size() - 1)));
  EXPECT_FALSE(s->Open("mcp-exec://resource/"));
  EXPECT_FALSE(s->Open(""));
  EXPECT_EQ(s->used_bytes(), 20);
}

TEST_F(ResourceStoreTest, TheOldestGoFirstToMakeRoom) {
  auto s = Make(100);
  std::string a = Put(*s, "a", 40), b = Put(*s, "b", 40), c = Put(*s, "c", 40);
  ASSERT_FALSE(c.empty());
  EXPECT_FALSE(s->Open(a)) << "evicted";
  EXPECT_TRUE(s->Open(b));
  EXPECT_TRUE(s->Open(c));
  EXPECT_EQ(s->used_bytes(), 80);
  EXPECT_EQ(s->count(), 2);
  // Larger than the whole store: refused, and nothing else is lost for it.
  EXPECT_EQ(Put(*s, "d", 101), "");
  EXPECT_TRUE(s->Open(b));
  EXPECT_EQ(s->used_bytes(), 80);
}

TEST_F(ResourceStoreTest, AWriterPastItsLimitFailsAndGivesItsBytesBack) {
  auto s = Make(1000);
  auto w = s->Begin(10);
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->Write("12345", 5));
  EXPECT_EQ(s->used_bytes(), 5);
  EXPECT_FALSE(w->Write("1234567", 7));
  EXPECT_TRUE(w->failed());
  EXPECT_EQ(s->used_bytes(), 0);
  EXPECT_FALSE(s->Commit(*w, "x", ""));
  // A writer dropped unpublished leaves nothing behind either.
  {
    auto dropped = s->Begin(100);
    dropped->Write("abc", 3);
  }
  EXPECT_EQ(s->used_bytes(), 0);
}

// A filesystem short of room: the store asks its reclaim (the executor's
// removal of ended runs' folders) once per resource, then reads the room
// again; what is still short fails saying so, and a room the reclaim gave
// back is written into.
TEST_F(ResourceStoreTest, AShortFilesystemIsReclaimedOnceThenRefusedSayingWhy) {
  std::string error;
  // Keeping an exabyte free: never room, however much the reclaim frees.
  auto never =
      ResourceStore::Create(root_, 1 << 20, std::chrono::seconds(60), int64_t{1} << 60, &error);
  ASSERT_TRUE(never) << error;
  int reclaims = 0;
  never->SetReclaim([&] { ++reclaims; });
  auto w = never->Begin(100);
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->Write("abc", 3));
  EXPECT_EQ(reclaims, 1);
  EXPECT_NE(w->why().find("the store leaves"), std::string::npos) << w->why();
  EXPECT_FALSE(w->Write("abc", 3));
  EXPECT_EQ(reclaims, 1) << "once per resource";
  // Nothing kept free: the reclaim is never needed.
  auto roomy = Make(1 << 20);
  roomy->SetReclaim([&] { ++reclaims; });
  EXPECT_FALSE(Put(*roomy, "a.txt", 10).empty());
  EXPECT_EQ(reclaims, 1);
}

TEST_F(ResourceStoreTest, NothingIsServedPastItsTtlAndTheFolderGoesWithTheStore) {
  auto s = Make(1000, /*ttl_s=*/1);
  std::string a = Put(*s, "a", 10);
  EXPECT_TRUE(s->Open(a));
  EXPECT_EQ(Entries(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_FALSE(s->Open(a));
  EXPECT_EQ(s->used_bytes(), 0);
  Put(*s, "b", 10);
  s.reset();
  EXPECT_EQ(Entries(), 0) << "removed at shutdown";
}

// The results channel: a "link" record's bytes go to the store as they
// come, and the file is listed among the run's files with its URI.
std::string Frame(const json& header, const std::string& payload) {
  const std::string head = header.dump();
  uint32_t n[2] = {static_cast<uint32_t>(head.size()), static_cast<uint32_t>(payload.size())};
  return std::string(reinterpret_cast<const char*>(n), 8) + head + payload;
}

RunOutcome Feed(ResultsReader& reader, const std::string& bytes) {
  int p[2];
  EXPECT_EQ(pipe2(p, O_NONBLOCK), 0);
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = write(p[1], bytes.data() + off, std::min<size_t>(bytes.size() - off, 1000));
    if (n > 0) off += static_cast<size_t>(n);
    reader.Read(p[0]);
  }
  close(p[1]);
  reader.Read(p[0]);
  close(p[0]);
  RunOutcome o;
  reader.Finish(&o);
  return o;
}

TEST_F(ResourceStoreTest, LinkedFilesStreamIntoTheStoreWithinTheRunsRoom) {
  auto s = Make(1 << 20);
  ResultLimits limits{2, 1024, 3, 100, 10, 2000};
  limits.max_link_bytes = 5000;
  ResultsReader reader(limits, s.get());
  const std::string big(3000, 'B');
  RunOutcome o = Feed(
      reader, Frame({{"kind", "file"}, {"path", "out/small"}}, "s") +
                  Frame({{"kind", "file"}, {"path", "out/big"}, {"link", true}}, big) +
                  Frame({{"kind", "file"}, {"path", "out/big2"}, {"link", true}}, big) +  // room
                  Frame({{"kind", "file"}, {"path", "../x"}, {"link", true}}, "x") +      // path
                  Frame({{"kind", "result"}}, "7"));
  ASSERT_EQ(o.files.size(), 2u);
  EXPECT_EQ(o.files[0].name, "out/small");
  EXPECT_TRUE(o.files[0].uri.empty());
  EXPECT_EQ(o.files[1].name, "out/big");
  EXPECT_EQ(o.files[1].size, 3000);
  EXPECT_EQ(Contents(*s, o.files[1].uri), big);
  ASSERT_EQ(o.files_omitted.size(), 1u);
  EXPECT_EQ(o.files_omitted[0].path, "out/big2");
  EXPECT_EQ(o.files_omitted[0].why, "bytes");
  EXPECT_EQ(o.result, "7") << "records after a link still parse";
  EXPECT_EQ(s->used_bytes(), 3000);

  // In the tool's result: a resource_link item, and the path in files.
  ExecResult r;
  static_cast<RunOutcome&>(r) = o;
  json t = ToolResult(r);
  const json& link = t["content"][2];
  EXPECT_EQ(link["type"], "resource_link");
  EXPECT_EQ(link["uri"], o.files[1].uri);
  EXPECT_EQ(link["name"], "out/big");
  EXPECT_EQ(link["size"], 3000);
  EXPECT_EQ(t["structuredContent"]["files"], json::array({"out/small", "out/big"}));
}

TEST_F(ResourceStoreTest, ALinkCutByTheRunsEndIsNeverPublished) {
  auto s = Make(1 << 20);
  ResultLimits limits{2, 1024, 3, 100, 10, 2000};
  limits.max_link_bytes = 5000;
  ResultsReader reader(limits, s.get());
  std::string frame = Frame({{"kind", "file"}, {"path", "out/big"}, {"link", true}}, "0123456789");
  RunOutcome o = Feed(reader, frame.substr(0, frame.size() - 4));
  EXPECT_TRUE(o.files.empty());
  EXPECT_EQ(s->count(), 0);
}

TEST(ResourcePartsTest, PartsAreFourMiBAndNamedByTheirUri) {
  EXPECT_EQ(ResourceParts(0), 1);
  EXPECT_EQ(ResourceParts(kResourcePartBytes), 1);
  EXPECT_EQ(ResourceParts(kResourcePartBytes + 1), 2);
  EXPECT_EQ(ResourceParts(20 << 20), 5);
  EXPECT_EQ(ResourcePartUri("mcp-exec://resource/ab/out/x", 3),
            "mcp-exec://resource/ab/out/x?part=3");
  EXPECT_EQ(ResourceContentsItem("u", "text/plain", "hi")["text"], "hi");
  EXPECT_EQ(ResourceContentsItem("u", "x", std::string("\xff\x01", 2))["blob"], "/wE=");
}

}  // namespace
}  // namespace mcpexec
