// Issue 19, the second red team: what a run can make its answer say. The
// results channel is written by the run (the code can write records itself),
// so every record is checked by the supervisor and a bad one costs only
// itself; what the runtime cannot return (an odd name, an unreadable file, a
// figure it cannot draw) is listed and counted, never dropped silently.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "base/base64.h"
#include "server_process.h"

namespace mcpexec::testing {
namespace {

class ResultsChannelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess();
    server_->Initialize();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static ServerProcess* server_;
};
ServerProcess* ResultsChannelTest::server_ = nullptr;

json OmittedEntry(const json& out, const std::string& path) {
  for (const json& f : out.value("files_omitted", json::array())) {
    if (f.value("path", "") == path) return f;
  }
  return nullptr;
}

// The peak resident size (VmHWM) of a process, in KiB, or -1.
long PeakRssKiB(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Width and height from a PNG's IHDR chunk.
std::pair<uint32_t, uint32_t> PngSize(const std::string& png) {
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  if (png.size() < 24) return {0, 0};
  return {be32(16), be32(20)};
}

// Point 6: a name that is not UTF-8 stopped the parsing of every later
// record: later files and the image omission count vanished.
TEST_F(ResultsChannelTest, AFileNameThatIsNotUtf8CostsOnlyItself) {
  json out = server_->Exec(R"(
import os
import matplotlib.pyplot as plt
os.makedirs("out", exist_ok=True)
for name in (b"out/a.txt", b"out/b\xff.txt", b"out/c.txt"):
    with open(name, "wb") as f:
        f.write(b"x")
for i in range(10):
    plt.figure()
    plt.plot([0, i])
)");
  EXPECT_EQ(out["exit_code"], 0) << out.dump();
  EXPECT_EQ(out["files"], json::array({"out/a.txt", "out/c.txt"})) << out.dump();
  json odd = OmittedEntry(out, "out/b\\xff.txt");
  ASSERT_TRUE(odd.is_object()) << out.dump();
  EXPECT_EQ(odd["why"], "name");
  EXPECT_EQ(odd["bytes"], 1);
  EXPECT_EQ(out["images"], 8) << out.dump();
  EXPECT_EQ(out["images_omitted"], 2) << out.dump();
}

// Point 7: resource URIs were built from raw names; a name of percent
// escapes decoded to another path, and ?, #, spaces made misleading URIs.
TEST_F(ResultsChannelTest, ResourceUrisArePercentEncodedAndOddNamesAreListed) {
  json r = server_->Call({{"code", R"(
import os
os.makedirs("out", exist_ok=True)
for name in ("%2e%2e%2f%2e%2e%2fhome%2fuser%2f.bashrc", "a b?c#d.txt", "new\nline.txt",
             "report\u202etxt.exe"):
    with open(os.path.join("out", name), "w") as f:
        f.write("x")
)"}});
  json out = r["structuredContent"];
  EXPECT_EQ(out["exit_code"], 0) << out.dump();
  std::set<std::string> uris;
  for (const json& item : r["content"]) {
    if (item["type"] == "resource") uris.insert(item["resource"]["uri"].get<std::string>());
  }
  EXPECT_EQ(uris, (std::set<std::string>{
                      "file:///out/%252e%252e%252f%252e%252e%252fhome%252fuser%252f.bashrc",
                      "file:///out/a%20b%3Fc%23d.txt"}))
      << r.dump();
  ASSERT_TRUE(OmittedEntry(out, "out/new\\x0aline.txt").is_object()) << out.dump();
  EXPECT_EQ(OmittedEntry(out, "out/new\\x0aline.txt")["why"], "name");
  ASSERT_TRUE(OmittedEntry(out, "out/report\\u202etxt.exe").is_object()) << out.dump();
  EXPECT_EQ(OmittedEntry(out, "out/report\\u202etxt.exe")["why"], "name");
}

// Point 8: images were bounded in bytes only, and records the code wrote
// itself passed forged dimensions and an SVG labelled image/png.
TEST_F(ResultsChannelTest, ImagesAreCheckedForTheirRealTypeAndSize) {
  json r = server_->Call({{"code", R"(
import json, os, struct, zlib
import mcp_exec_runtime as rt
from PIL import Image
display(Image.new("L", (16000, 16000)))

def record(meta, payload):
    head = json.dumps(meta).encode()
    os.write(rt.results._results_fd, struct.pack("<II", len(head), len(payload)) + head + payload)

def png(width, height):
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return b"\x89PNG\r\n\x1a\n" + chunk

for _ in range(6):
    record({"kind": "image", "mimeType": "image/png"}, png(32768, 32768))
record({"kind": "image", "mimeType": "image/png"}, b"<svg xmlns='http://www.w3.org/2000/svg'/>")
record({"kind": "image", "mimeType": "image/png"}, png(0, 10))
)"}});
  json out = r["structuredContent"];
  EXPECT_EQ(out["exit_code"], 0) << out.dump();
  EXPECT_EQ(out["images"], 1) << out.dump();
  EXPECT_EQ(out["images_omitted"], 8) << out.dump();
  for (const json& item : r["content"]) {
    if (item["type"] != "image") continue;
    auto png = Base64Decode(item["data"].get<std::string>());
    ASSERT_TRUE(png.has_value());
    auto [w, h] = PngSize(*png);
    EXPECT_GE(w, 1u);
    EXPECT_LE(w, 8000u);
    EXPECT_EQ(w, h);
  }
}

// Point 11: a figure the runtime could not draw raised into the caller's
// code from plt.show(), and one left open vanished uncounted.
TEST_F(ResultsChannelTest, AFigureThatCannotBeDrawnIsCountedNotRaised) {
  json out = server_->Exec(R"(
import matplotlib.artist
import matplotlib.pyplot as plt

class Broken(matplotlib.artist.Artist):
    def draw(self, renderer):
        raise ValueError("cannot draw this")

plt.figure().add_artist(Broken())
plt.show()
print("after show")
plt.figure().add_artist(Broken())
plt.figure()
plt.plot([1, 2])
)");
  EXPECT_EQ(out["exit_code"], 0) << out.dump();
  EXPECT_EQ(out["stdout"], "after show\n") << out.dump();
  EXPECT_EQ(out["images"], 1) << out.dump();
  EXPECT_EQ(out["images_omitted"], 2) << out.dump();
}

// Point 12: a last expression whose repr raised SystemExit or MemoryError
// was exit 0; a repr holding a lone surrogate failed the run.
TEST_F(ResultsChannelTest, AReprKeepsTheMeaningOfSystemExitAndMemoryError) {
  json exit7 = server_->Exec(R"(
class Bye:
    def __repr__(self):
        raise SystemExit(7)
Bye()
)");
  EXPECT_EQ(exit7["exit_code"], 7) << exit7.dump();
  json memory = server_->Exec(R"(
class Big:
    def __repr__(self):
        raise MemoryError
Big()
)");
  EXPECT_EQ(memory["exit_code"], 1) << memory.dump();
  EXPECT_EQ(memory.value("reason", ""), "memory") << memory.dump();
  json odd = server_->Exec(R"(
class Odd:
    def __repr__(self):
        return "a\ud800b"
Odd()
)");
  EXPECT_EQ(odd["exit_code"], 0) << odd.dump();
  EXPECT_EQ(odd.value("result", ""), "a\\ud800b") << odd.dump();
}

// Point 13: out/ entries that could not be read were skipped without a word.
TEST_F(ResultsChannelTest, UnreadableOutEntriesAreListed) {
  json out = server_->Exec(R"(
import os
os.makedirs("out/locked", exist_ok=True)
with open("out/secret.txt", "w") as f:
    f.write("x")
with open("out/locked/inner.txt", "w") as f:
    f.write("y")
with open("out/ok.txt", "w") as f:
    f.write("z")
os.chmod("out/secret.txt", 0)
os.chmod("out/locked", 0)
)");
  EXPECT_EQ(out["exit_code"], 0) << out.dump();
  EXPECT_EQ(out["files"], json::array({"out/ok.txt"})) << out.dump();
  ASSERT_TRUE(OmittedEntry(out, "out/secret.txt").is_object()) << out.dump();
  EXPECT_EQ(OmittedEntry(out, "out/secret.txt")["why"], "unreadable");
  ASSERT_TRUE(OmittedEntry(out, "out/locked").is_object()) << out.dump();
  EXPECT_EQ(OmittedEntry(out, "out/locked")["why"], "unreadable");
}

// Point 9: about 17 MiB of caps made a 75 MB answer line (control bytes
// escape six-fold in JSON, and the answer holds each stream twice): two such
// calls took the supervisor from 8 to 375 MiB. Streams are cut where their
// escaping would more than double them, and files that would blow up go as
// blobs.
TEST_F(ResultsChannelTest, ControlBytesCannotBlowUpTheAnswer) {
  const long peak_before = PeakRssKiB(server_->pid());
  json r = server_->Call({{"code", R"(
import os, sys
os.makedirs("out", exist_ok=True)
with open("out/ctl.txt", "wb") as f:
    f.write(b"" * (4 << 20))
sys.stdout.write("" * (1 << 20))
sys.stderr.write("" * (1 << 20))
)"}});
  const size_t answer = r.dump().size();
  json out = r["structuredContent"];
  EXPECT_EQ(out["exit_code"], 0) << out.dump().substr(0, 300);
  EXPECT_EQ(out["truncated"], true);
  EXPECT_LT(out["stdout"].get<std::string>().size(), size_t{1} << 20);
  EXPECT_TRUE(out.contains("stdout_tail"));
  EXPECT_TRUE(out.contains("stderr_tail"));
  bool blob = false;
  for (const json& item : r["content"]) {
    if (item["type"] == "resource") blob = item["resource"].contains("blob");
  }
  EXPECT_TRUE(blob) << "4 MiB of control bytes go as base64 (5.3 MiB), not as 24 MiB of escapes";
  EXPECT_LT(answer, size_t{16} << 20) << "bytes of answer";
  const long peak_after = PeakRssKiB(server_->pid());
  RecordProperty("answer_bytes", std::to_string(answer));
  RecordProperty("supervisor_peak_rss_growth_kib", std::to_string(peak_after - peak_before));
  EXPECT_LT(peak_after - peak_before, 96 * 1024) << "KiB of supervisor peak RSS for one answer";
}

}  // namespace
}  // namespace mcpexec::testing
