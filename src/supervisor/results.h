// The supervisor's end of a run's results channel: the records the runtime
// writes (figures, out/ files, the last expression's value, what it left
// out), read under one byte bound while the run goes and checked afterwards.
// Nothing here trusts the run: a record of an unknown kind, a malformed
// header, an image that is no PNG, a path outside out/, or anything past a
// bound is dropped (and counted where the agent should know).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "base/config.h"
#include "process/zygote_args.h"
#include "supervisor/run.h"

namespace mcpexec {

using ResultLimits = OutputLimits;
// The configured bounds: what the zygote passes to every runtime and what
// the reader enforces.
ResultLimits ResultLimitsFor(const Config& config);

// Why an out/ file may be listed in files_omitted: past the count or the
// bytes, a name that is not plain UTF-8 (listed escaped), an entry that could
// not be read. The output schema's enum and the reader both use this list.
inline constexpr std::array<const char*, 4> kOmittedWhy = {"count", "bytes", "name", "unreadable"};
bool IsOmittedWhy(const std::string& why);

class ResultsReader {
 public:
  explicit ResultsReader(const ResultLimits& limits) : limits_(limits) {}
  // Reads what is there (the fd is non-blocking); false at EOF or on error.
  // Past KeepBytes() it reads on and drops, so the writer never blocks.
  bool Read(int fd);
  // Parses what was kept into the outcome.
  void Finish(RunOutcome* out) const;

 private:
  void Take(const std::string& kind, const nlohmann::json& header, std::string payload,
            RunOutcome* out, int64_t* out_bytes) const;
  ResultLimits limits_;
  std::string buf_;  // records past KeepBytes() are dropped whole or cut
};

// True for a path under out/ that RelativePathProblem (base/fs_util.h)
// finds nothing wrong with.
bool IsOutFilePath(const std::string& path);

}  // namespace mcpexec
