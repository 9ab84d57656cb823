// Runner and zygote -> supervisor: what the supervisor reads from the other
// side of the sandbox, written by a runner that may be running anything.
// The first byte picks the channel, the rest is what arrives on it:
//   0: the results pipe (figures, out/ files, the last value, what was left
//      out), read by the real ResultsReader under small limits; bit 2 of
//      the first byte repeats the bytes past the most the reader keeps.
//      Checked: what it takes keeps to every limit and the tool's result
//      built from it serializes strictly (as ToolResult does);
//   1: the status pipe (the lockdown verdict, the runtime's note, a session
//      cell's CellDone record), read by the supervisor's StatusReader in two
//      writes split where the second byte says. Checked: a verdict's error
//      is terminated, the reader keeps at most its bound;
//   2: one control message from the zygote, received as ZygoteClient
//      receives them; a kReady payload is parsed as the runtime report
//      (whose exceptions the client catches) and goes into the tool's
//      description.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "base/log.h"
#include "ipc/control.h"
#include "ipc/status.h"
#include "supervisor/results.h"
#include "supervisor/status_reader.h"
#include "tool/contract.h"
#include "tool/exec_backend.h"

namespace {

using json = nlohmann::json;
namespace ipc = mcpexec::ipc;

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz_wire_report: %s\n", what);
  abort();
}

mcpexec::Config SmallLimits() {
  mcpexec::Config c;
  c.max_images = 2;
  c.max_image_bytes = 2048;
  c.max_out_files = 3;
  c.max_out_bytes = 4096;
  c.max_result_bytes = 512;
  return c;
}

struct Pipe {
  Pipe() {
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) Fail("pipe2");
    r.Reset(p[0]);
    w.Reset(p[1]);
  }
  // Writes what fits; returns how much.
  size_t WriteSome(const char* data, size_t size) {
    ssize_t n = write(w.get(), data, size);
    if (n < 0 && errno != EAGAIN) Fail("write");
    return n < 0 ? 0 : static_cast<size_t>(n);
  }
  mcpexec::UniqueFd r, w;
};

void CheckOutcome(const mcpexec::RunOutcome& o, const mcpexec::Config& c) {
  if (static_cast<int64_t>(o.images.size()) > c.max_images) Fail("too many images");
  for (const auto& img : o.images) {
    if (img.mime != "image/png" || img.data.compare(0, 8, "\x89PNG\r\n\x1a\n", 8) != 0) {
      Fail("an image that is no PNG");
    }
    if (static_cast<int64_t>(img.data.size()) > c.max_image_bytes) Fail("an image too big");
  }
  if (static_cast<int64_t>(o.files.size()) > c.max_out_files) Fail("too many out/ files");
  int64_t total = 0;
  for (const auto& f : o.files) {
    if (!mcpexec::IsOutFilePath(f.name)) Fail("a file outside out/");
    total += static_cast<int64_t>(f.data.size());
  }
  if (total > c.max_out_bytes) Fail("out/ files past their bytes");
  if (o.files_omitted.size() > 100) Fail("more than 100 omitted files listed");
  for (const auto& f : o.files_omitted) {
    if (!mcpexec::IsOutFilePath(f.path) || f.bytes < 0 || !mcpexec::IsOmittedWhy(f.why)) {
      Fail("a bad omitted file");
    }
  }
  if (o.images_omitted < 0 || o.files_omitted_count < 0) Fail("a negative count");
  if (static_cast<int64_t>(o.result.size()) > c.max_result_bytes) Fail("result too long");
}

void Results(const std::string& in, unsigned mode) {
  static const mcpexec::Config kConfig = SmallLimits();
  const mcpexec::ResultLimits limits = mcpexec::ResultLimitsFor(kConfig);
  mcpexec::ResultsReader reader(limits);
  Pipe p;
  // Past what the reader keeps only when asked: that is a megabyte a run.
  size_t repeat = 1;
  if ((mode & 4) && !in.empty()) repeat = static_cast<size_t>(limits.KeepBytes()) / in.size() + 2;
  for (size_t i = 0; i < repeat; ++i) {
    size_t off = 0;
    while (off < in.size()) {
      off += p.WriteSome(in.data() + off, in.size() - off);
      if (!reader.Read(p.r.get())) Fail("the results pipe ended early");
    }
  }
  p.w.Reset();
  if (reader.Read(p.r.get())) Fail("EOF not seen");
  mcpexec::RunOutcome outcome;
  reader.Finish(&outcome);
  CheckOutcome(outcome, kConfig);
  const json result = mcpexec::ToolResult(mcpexec::ToExecResult(std::move(outcome)));
  (void)result.dump();  // strict, as ToolResult's own text item is
}

void Status(const std::string& in) {
  const size_t split = in.empty() ? 0 : static_cast<unsigned char>(in[0]) % (in.size() + 1);
  mcpexec::StatusReader reader;
  Pipe p;
  size_t off = 0;
  bool open = true;
  for (size_t end : {split, in.size()}) {
    while (open && off < end) {
      off += p.WriteSome(in.data() + off, end - off);
      open = reader.Read(p.r.get());
    }
    mcpexec::ipc::CellDone done{};
    (void)reader.cell_done(0, &done);
    (void)reader.cell_done(sizeof(ipc::LockdownVerdict), &done);
  }
  p.w.Reset();
  if (open && reader.Read(p.r.get())) Fail("EOF not seen");
  if (const ipc::LockdownVerdict* v = reader.verdict()) {
    if (v->magic != ipc::kVerdictMagic) Fail("a verdict without its magic");
    if (strnlen(v->error, sizeof v->error) >= sizeof v->error) Fail("an unterminated error");
    // What CheckVerdict makes of a failed one: a tool error's text.
    (void)mcpexec::ToolError("the sandbox could not lock this run down: " + std::string(v->error))
        .dump(-1, ' ', false, json::error_handler_t::replace);
  }
  (void)reader.note();
  // The trace is taken only in order, within the bounds asked.
  ipc::RunNote n{};
  const int64_t after = in.size() > 1 ? static_cast<unsigned char>(in[1]) : 0;
  if (reader.trace(after, after + 1000000000, &n) &&
      (n.code_started_ns < after || n.code_finished_ns < n.code_started_ns ||
       n.code_finished_ns > after + 1000000000 || n.faults_before < 0 || n.faults_during < 0)) {
    Fail("a trace out of order or out of bounds was taken");
  }
}

void Control(const std::string& in) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) Fail("socketpair");
  mcpexec::UniqueFd a(sv[0]), b(sv[1]);
  if (send(a.get(), in.data(), in.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(in.size())) {
    Fail("send");
  }
  ipc::Header h{};
  std::string payload;
  if (ipc::Receive(b.get(), &h, &payload, nullptr) <= 0) return;
  if (h.type != ipc::Type::kReady) return;
  // As ZygoteClient::AwaitReadyMessage reads the report.
  mcpexec::RuntimeReport report;
  try {
    report = mcpexec::ParseRuntimeReport(json::parse(payload));
  } catch (const std::exception&) {
    return;  // "unreadable zygote report": the server does not start
  }
  static const mcpexec::Config kConfig;
  (void)json(mcpexec::ExecDescription(kConfig, report, "")).dump();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mcpexec::log::SetLevel("error");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return -1;
  const std::string in(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0:
      Results(in, data[0]);
      break;
    case 1:
      Status(in);
      break;
    default:
      Control(in);
      break;
  }
  return 0;
}
