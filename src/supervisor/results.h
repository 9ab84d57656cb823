// The supervisor's end of a run's results channel: the records the runtime
// writes (figures, out/ files, the last expression's value, what it left
// out), read under one byte bound while the run goes and checked afterwards.
// Nothing here trusts the run: a record of an unknown kind, a malformed
// header, an image that is no PNG, a path outside out/, or anything past a
// bound is dropped (and counted where the agent should know).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ipc/zygote_args.h"
#include "model/config.h"
#include "resources/store.h"
#include "supervisor/run.h"

namespace mcpexec {

using ResultLimits = OutputLimits;
// The configured bounds: what the zygote passes to every runtime and what
// the reader enforces.
ResultLimits ResultLimitsFor(const Config& config);

// Why an out/ file may be listed in files_omitted: past the count or the
// bytes, a name that is not plain UTF-8 (listed escaped), an entry that could
// not be read. The output schema's enum and the reader both use this list.
inline constexpr std::array<const char*, 5> kOmittedWhy = {"count", "bytes", "name", "unreadable",
                                                           "not_a_file"};
bool IsOmittedWhy(const std::string& why);

class ResultsReader {
 public:
  // store: where an out/ file too big to embed goes (a "link" record), up
  // to max_link_bytes for all of a run's; null: such files are omitted.
  explicit ResultsReader(const ResultLimits& limits, ResourceStore* store = nullptr)
      : limits_(limits), store_(store), link_room_(store ? limits.max_link_bytes : 0) {}
  // Reads what is there (the fd is non-blocking); false at EOF or on error.
  // Past KeepBytes() it reads on and drops, so the writer never blocks; a
  // linked file's bytes go to the store as they come.
  bool Read(int fd);
  // Parses what was kept into the outcome.
  void Finish(RunOutcome* out);

 private:
  void Consume(const char* data, size_t n);
  void StartBody();
  void EndBody();
  void Take(const std::string& kind, const nlohmann::json& header, std::string payload,
            RunOutcome* out, int64_t* out_bytes) const;
  ResultLimits limits_;
  ResourceStore* store_;
  int64_t link_room_;
  std::string buf_;  // whole records kept, at most KeepBytes()
  // The record being read: its frame, its header, then its body (kept into
  // buf_, written to a link, or dropped).
  enum class Part { kFrame, kHeader, kBody } part_ = Part::kFrame;
  std::string frame_, head_;
  uint64_t head_len_ = 0, body_len_ = 0, body_seen_ = 0;
  enum class Body { kKeep, kLink, kDrop } body_ = Body::kDrop;
  nlohmann::json link_header_;
  std::unique_ptr<ResourceStore::Writer> link_;
  struct Linked {
    std::string path, uri;
    int64_t bytes;
  };
  std::vector<Linked> linked_;
  std::vector<OmittedFile> link_omitted_;
};

// True for a path under out/ that RelativePathProblem (base/fs_util.h)
// finds nothing wrong with.
bool IsOutFilePath(const std::string& path);

}  // namespace mcpexec
