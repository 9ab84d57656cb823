// The run bundle: what the run's sealed memfd (ipc::kCode) holds, the code
// and the caller's input files. Supervisor -> runner; the zygote passes the
// fd on unread.
//
//   field code            (ipc/frame.h: u32 length, then the bytes)
//   u32   file count
//   per file: field path (relative to the run's folder), field content
//
// Nothing may follow the last file. The supervisor validated every path
// and size before (tool/contract_validation.cc); the runner checks the
// shape again and exits 126 on a bundle it cannot read.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace mcpexec::ipc {

std::string EncodeRunBundle(const std::string& code,
                            const std::vector<std::pair<std::string, std::string>>& files);
bool DecodeRunBundle(const std::string& bundle, std::string* code,
                     std::vector<std::pair<std::string, std::string>>* files);

}  // namespace mcpexec::ipc
