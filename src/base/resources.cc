#include "base/resources.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/text.h"

namespace mcpexec {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool HasToken(const std::string& csv, const std::string& token) {
  const std::vector<std::string> items = SplitComma(csv);
  return std::find(items.begin(), items.end(), token) != items.end();
}

// A number in a cgroup or /proc file: ParseDecimal's digits, trimmed. Past
// 18 digits is no number (v1 writes "no limit" with 19), so no bound.
bool ParseCount(std::string text, int64_t* out) {
  text.erase(text.find_last_not_of(" \n\t") + 1);
  text.erase(0, text.find_first_not_of(" \t"));
  return ParseDecimal(text, out);
}

// One controller's hierarchy as this process sees it.
struct Hierarchy {
  int version = 0;  // 0: not found
  CgroupMount mount;
  std::string own_path;
};

// The hierarchy of a v1 controller ("cpu", "memory"): a v1 controller mounted
// on its own is the one that counts; else the v2 one.
Hierarchy FindHierarchy(const std::string& root, const std::string& controller) {
  CgroupMount v1 = FindCgroupMount(controller, root);
  if (!v1.point.empty()) return {1, v1, OwnCgroupPath(controller, root)};
  CgroupMount v2 = FindCgroupMount("", root);
  if (!v2.point.empty()) return {2, v2, OwnCgroupPath("", root)};
  return {};
}

// The directories from this process's cgroup up to the mount point: where
// the limits that bound it are written (the tightest one counts).
std::vector<std::string> CgroupChain(const std::string& root, const Hierarchy& h) {
  // A mount whose root is not an ancestor of our path (a container without
  // a cgroup namespace sees its own cgroup mounted as "/"): its top is ours.
  std::string dir = root + CgroupDir(h.mount, h.own_path);
  std::string top = root + h.mount.point;
  if (access(dir.c_str(), F_OK) != 0) dir = top;
  std::vector<std::string> chain;
  for (;;) {
    chain.push_back(dir);
    if (dir.size() <= top.size()) break;
    dir = dir.substr(0, dir.rfind('/'));
    if (dir.size() < top.size()) break;
  }
  return chain;
}

struct Bound {
  int64_t value = -1;  // -1: none
  std::string where;
};

// The CPU quota in thousandths of a CPU, the tightest along the chain.
Bound CpuQuota(const std::string& root) {
  Hierarchy h = FindHierarchy(root, "cpu");
  Bound best;
  if (h.version == 0) return best;
  for (const std::string& dir : CgroupChain(root, h)) {
    int64_t milli = -1;
    std::string what;
    if (h.version == 2) {
      std::string text = Slurp(dir + "/cpu.max");
      milli = ParseCpuMaxMilli(text);
      text.erase(text.find_last_not_of(" \n") + 1);
      what = "cgroup v2 cpu.max \"" + text + "\"";
    } else {
      int64_t quota = 0, period = 0;
      std::string q = Slurp(dir + "/cpu.cfs_quota_us"), p = Slurp(dir + "/cpu.cfs_period_us");
      if (ParseCount(q, &quota) && ParseCount(p, &period) && period > 0 && quota > 0) {
        milli = quota * 1000 / period;
        what = "cgroup v1 cpu.cfs_quota_us " + std::to_string(quota) + " / cpu.cfs_period_us " +
               std::to_string(period);
      }
    }
    if (milli > 0 && (best.value < 0 || milli < best.value)) {
      best = {milli, what + " in " + dir.substr(root.size())};
    }
  }
  return best;
}

// The memory limit in MiB, the tightest along the chain.
Bound MemoryLimit(const std::string& root) {
  Hierarchy h = FindHierarchy(root, "memory");
  Bound best;
  if (h.version == 0) return best;
  const char* file = h.version == 2 ? "memory.max" : "memory.limit_in_bytes";
  for (const std::string& dir : CgroupChain(root, h)) {
    int64_t mb = ParseMemoryLimitMb(Slurp(dir + "/" + file));
    if (mb > 0 && (best.value < 0 || mb < best.value)) {
      best = {mb, std::string("cgroup v") + std::to_string(h.version) + " " + file + " in " +
                      dir.substr(root.size())};
    }
  }
  return best;
}

int64_t AllowedCpus(const std::string& root) {
  std::stringstream in(Slurp(root + "/proc/self/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return CountCpuList(line.substr(18));
  }
  return -1;
}

}  // namespace

CgroupMount FindCgroupMount(const std::string& controller, const std::string& prefix) {
  std::stringstream mounts(Slurp(prefix + "/proc/self/mountinfo"));
  std::string line;
  while (std::getline(mounts, line)) {
    std::stringstream f(line);
    std::string id, parent, dev, root, point, opts, field, fstype, source, super;
    f >> id >> parent >> dev >> root >> point >> opts;
    while (f >> field && field != "-") {
    }
    f >> fstype >> source >> super;
    if (controller.empty() ? fstype == "cgroup2"
                           : fstype == "cgroup" && HasToken(super, controller)) {
      return {point, root};
    }
  }
  return {};
}

std::string OwnCgroupPath(const std::string& controller, const std::string& prefix) {
  std::stringstream in(Slurp(prefix + "/proc/self/cgroup"));
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctrls = line.substr(a + 1, b - a - 1);
    if (controller.empty() ? ctrls.empty() : HasToken(ctrls, controller)) {
      return line.substr(b + 1);
    }
  }
  return "";
}

std::string CgroupDir(const CgroupMount& m, const std::string& own) {
  std::string rel = own;
  if (m.root != "/" && rel.compare(0, m.root.size(), m.root) == 0) rel = rel.substr(m.root.size());
  return m.point + (rel == "/" ? "" : rel);
}

int64_t ParseCpuMaxMilli(const std::string& cpu_max) {
  std::stringstream in(cpu_max);
  std::string quota_text, period_text;
  in >> quota_text >> period_text;
  int64_t quota = 0, period = 100000;
  if (quota_text == "max" || !ParseCount(quota_text, &quota) || quota <= 0) return -1;
  if (!period_text.empty() && (!ParseCount(period_text, &period) || period <= 0)) return -1;
  return quota * 1000 / period;
}

int64_t ParseMemoryLimitMb(const std::string& limit) {
  int64_t bytes = 0;
  if (!ParseCount(limit, &bytes) || bytes <= 0) return -1;  // "max", "-1", garbage
  // v1 writes "no limit" as the largest page-aligned long.
  if (bytes >= (int64_t{1} << 60)) return -1;
  return std::max<int64_t>(bytes >> 20, 1);
}

int64_t CountCpuList(const std::string& list) {
  int64_t count = 0;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t dash = item.find('-');
    int64_t a = 0, b = 0;
    if (dash == std::string::npos) {
      if (!ParseCount(item, &a)) continue;
      b = a;
    } else if (!ParseCount(item.substr(0, dash), &a) || !ParseCount(item.substr(dash + 1), &b) ||
               b < a) {
      continue;
    }
    count += b - a + 1;
  }
  return count > 0 ? count : -1;
}

Resources ReadResources(const std::string& root, int64_t online_cpus, int64_t physical_mb) {
  if (online_cpus < 0) online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (physical_mb < 0) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    physical_mb = pages > 0 && page > 0 ? int64_t{pages} * page / (int64_t{1} << 20) : 4096;
  }
  Resources r;
  int64_t online = std::max<int64_t>(online_cpus, 1);
  int64_t allowed = AllowedCpus(root);
  r.cpus = allowed > 0 ? std::min(allowed, online) : online;
  r.cpus_from = allowed > 0 && allowed < online
                    ? "CPU affinity: " + std::to_string(allowed) + " of " + std::to_string(online) +
                          " online CPUs"
                    : std::to_string(online) + " online CPUs";
  Bound quota = CpuQuota(root);
  if (quota.value > 0) {
    int64_t whole = std::max<int64_t>((quota.value + 999) / 1000, 1);  // 1.5 CPUs -> 2 at once
    if (whole < r.cpus) {
      r.cpus = whole;
      r.cpus_from = quota.where + " (" + std::to_string(whole) + " CPU" + (whole == 1 ? "" : "s") +
                    "; " + r.cpus_from + ")";
    }
  }
  r.memory_mb = physical_mb;
  r.memory_from = "physical memory " + std::to_string(physical_mb) + " MiB";
  Bound mem = MemoryLimit(root);
  if (mem.value > 0 && mem.value < physical_mb) {
    r.memory_mb = mem.value;
    r.memory_from = mem.where + " (" + std::to_string(mem.value) + " MiB; " + r.memory_from + ")";
  }
  return r;
}

const Resources& ProcessResources() {
  static const Resources r = ReadResources();
  return r;
}

}  // namespace mcpexec
