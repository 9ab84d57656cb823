#include "ipc/zygote_args.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>

#include "base/text.h"
#include "model/config.h"

namespace mcpexec {
namespace {

using Field = std::function<bool(ZygoteArgs&, const std::string&)>;

template <typename T>
Field IntField(T ZygoteArgs::*field, int64_t lo) {
  return [=](ZygoteArgs& a, const std::string& v) {
    int64_t n = 0;
    // A value past the field's own type is refused, never truncated (a pid
    // of 42424259983 became -525412977, which the zygote's own argv then
    // could not say again).
    if (!ParseDecimal(v, &n) || n < lo ||
        static_cast<uint64_t>(n) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return false;
    }
    a.*field = static_cast<T>(n);
    return true;
  };
}

Field TextField(std::string ZygoteArgs::*field) {
  return [=](ZygoteArgs& a, const std::string& v) {
    a.*field = v;
    return true;
  };
}

// name -> (reader, writer): the one list of the zygote's arguments.
struct Arg {
  const char* name;
  Field read;
  std::function<std::string(const ZygoteArgs&)> write;
};

// A number in one of the structs ZygoteArgs carries (the run limits, the
// output limits), at least lo.
template <typename S>
Arg MemberArg(const char* name, S ZygoteArgs::*part, int64_t S::*field, int64_t lo) {
  return {name,
          [=](ZygoteArgs& a, const std::string& v) {
            int64_t n = 0;
            if (!ParseDecimal(v, &n) || n < lo) return false;
            a.*part.*field = n;
            return true;
          },
          [=](const ZygoteArgs& a) { return std::to_string(a.*part.*field); }};
}

Arg OutputArg(const char* name, int64_t OutputLimits::*field, int64_t lo) {
  return MemberArg(name, &ZygoteArgs::output, field, lo);
}

const std::vector<Arg>& Args() {
  auto num = [](auto field) {
    return [=](const ZygoteArgs& a) { return std::to_string(a.*field); };
  };
  auto text = [](std::string ZygoteArgs::*field) {
    return [=](const ZygoteArgs& a) { return a.*field; };
  };
  static const std::vector<Arg> args = [&] {
    std::vector<Arg> v = {
        {"supervisor", IntField(&ZygoteArgs::supervisor, 1), num(&ZygoteArgs::supervisor)},
        {"spares", IntField(&ZygoteArgs::spares, 0), num(&ZygoteArgs::spares)},
        {"ns", TextField(&ZygoteArgs::namespaces), text(&ZygoteArgs::namespaces)},
        {"outer-uid", IntField(&ZygoteArgs::outer_uid, 0), num(&ZygoteArgs::outer_uid)},
        {"outer-gid", IntField(&ZygoteArgs::outer_gid, 0), num(&ZygoteArgs::outer_gid)},
        {"huge-pages", IntField(&ZygoteArgs::huge_pages, 0), num(&ZygoteArgs::huge_pages)},
        {"prefault", IntField(&ZygoteArgs::prefault, 0), num(&ZygoteArgs::prefault)},
        {"preload", TextField(&ZygoteArgs::preload), text(&ZygoteArgs::preload)},
        {"site", TextField(&ZygoteArgs::site), text(&ZygoteArgs::site)},
        {"mounts", TextField(&ZygoteArgs::mounts), text(&ZygoteArgs::mounts)},
        OutputArg("max-images", &OutputLimits::max_images, 0),
        OutputArg("max-image-bytes", &OutputLimits::max_image_bytes, 1),
        OutputArg("max-out-files", &OutputLimits::max_out_files, 0),
        OutputArg("max-out-bytes", &OutputLimits::max_out_bytes, 0),
        OutputArg("max-result-bytes", &OutputLimits::max_result_bytes, 0),
        OutputArg("max-image-side", &OutputLimits::max_image_side, 1),
        OutputArg("max-link-bytes", &OutputLimits::max_link_bytes, 0),
        OutputArg("max-tool-frame-bytes", &OutputLimits::max_tool_frame_bytes, 0),
        OutputArg("max-tool-calls-in-flight", &OutputLimits::max_tool_calls_in_flight, 0),
        {"cgroup-version", IntField(&ZygoteArgs::cgroup_version, 0),
         num(&ZygoteArgs::cgroup_version)},
        {"cgroup-memory-dir", TextField(&ZygoteArgs::cgroup_memory_dir),
         text(&ZygoteArgs::cgroup_memory_dir)},
        {"cgroup-pids-dir", TextField(&ZygoteArgs::cgroup_pids_dir),
         text(&ZygoteArgs::cgroup_pids_dir)},
        {"cgroup-why-not-memory", TextField(&ZygoteArgs::cgroup_why_not_memory),
         text(&ZygoteArgs::cgroup_why_not_memory)},
        {"cgroup-why-not-pids", TextField(&ZygoteArgs::cgroup_why_not_pids),
         text(&ZygoteArgs::cgroup_why_not_pids)},
    };
    // The runs' uid and gid (MCP_EXEC_SANDBOX_UID, or the server's own).
    for (auto [name, field] : {std::pair{"sandbox-uid", &RunLimits::sandbox_uid},
                               std::pair{"sandbox-gid", &RunLimits::sandbox_gid}}) {
      v.push_back(
          {name,
           [field = field](ZygoteArgs& a, const std::string& s) {
             int64_t n = 0;
             if (!ParseDecimal(s, &n) || n < 1 || n > std::numeric_limits<int32_t>::max()) {
               return false;
             }
             a.limits.*field = static_cast<uint32_t>(n);
             return true;
           },
           [field = field](const ZygoteArgs& a) { return std::to_string(a.limits.*field); }});
    }
    for (const RunLimitField& f : kRunLimitFields) {
      v.push_back(MemberArg(f.arg, &ZygoteArgs::limits, f.field, 1));
    }
    return v;
  }();
  return args;
}

}  // namespace

int64_t OutputLimits::KeepBytes() const {
  return max_images * max_image_bytes + max_out_bytes + max_result_bytes + int64_t{1024} * 1024;
}

std::map<std::string, int64_t> OutputLimits::ByName() const {
  return {{"max_images", max_images},
          {"max_image_bytes", max_image_bytes},
          {"max_out_files", max_out_files},
          {"max_out_bytes", max_out_bytes},
          {"max_result_bytes", max_result_bytes},
          {"max_image_side", max_image_side},
          {"max_link_bytes", max_link_bytes},
          {"max_tool_frame_bytes", max_tool_frame_bytes},
          {"max_tool_calls_in_flight", max_tool_calls_in_flight}};
}

std::vector<std::string> ZygoteArgs::ToArgv() const {
  std::vector<std::string> argv = {"mcp-exec-zygote", "__zygote"};
  for (const Arg& a : Args()) argv.push_back(std::string("--") + a.name + "=" + a.write(*this));
  return argv;
}

bool ZygoteArgs::Parse(int argc, char** argv, ZygoteArgs* out, std::string* error) {
  ZygoteArgs parsed;
  std::map<std::string, bool> seen;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    auto eq = arg.find('=');
    const Arg* match = nullptr;
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      for (const Arg& a : Args()) {
        if (arg.compare(2, eq - 2, a.name) == 0 && eq - 2 == strlen(a.name)) match = &a;
      }
    }
    if (!match || !match->read(parsed, arg.substr(eq + 1))) {
      *error = "bad argument \"" + arg + "\"";
      return false;
    }
    seen[match->name] = true;
  }
  for (const Arg& a : Args()) {
    if (!seen.count(a.name)) {
      *error = std::string("missing --") + a.name;
      return false;
    }
  }
  *out = parsed;
  return true;
}

}  // namespace mcpexec
