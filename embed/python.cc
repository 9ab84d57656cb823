#include "embed/python.h"

#include <Python.h>
#include <pthread.h>
#include <pybind11/embed.h>
#include <signal.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "embed/runtime_source.h"

namespace py = pybind11;

namespace mcpexec::embed {

namespace {

// The interpreter's object arenas (256 KiB each), while the zygote warms
// up, come from one region aligned to huge pages instead of one mmap each:
// the warmed objects then sit in one mapping that can be collapsed onto
// huge pages. After the warm-up the region's unused tail is given back and
// new arenas are plain mmaps again (see CollapseHeapToHugePages), so that
// nothing reserved counts into a run's address space.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kArenaRegionBytes = size_t{256} << 20;
char* g_arena_region = nullptr;
size_t g_arena_used = 0;

void* ArenaAlloc(void* /*ctx*/, size_t size) {
  if (g_arena_region && g_arena_used + size <= kArenaRegionBytes) {
    void* p = g_arena_region + g_arena_used;
    g_arena_used += size;
    return p;
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// Both kinds are anonymous mappings: munmap frees either (a region's arena
// leaves a hole in it).
void ArenaFree(void* /*ctx*/, void* p, size_t size) { munmap(p, size); }

void UseHugeArenaRegion() {
  size_t span = kArenaRegionBytes + kHugePage;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return;
  auto start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) munmap(raw, aligned - start);
  uintptr_t end = aligned + kArenaRegionBytes;
  if (start + span > end) munmap(reinterpret_cast<void*>(end), start + span - end);
  g_arena_region = reinterpret_cast<char*>(aligned);
  madvise(g_arena_region, kArenaRegionBytes, MADV_HUGEPAGE);
  PyObjectArenaAllocator arenas{nullptr, ArenaAlloc, ArenaFree};
  PyObject_SetArenaAllocator(&arenas);
}

// The region keeps what the warm-up used (rounded up to a huge page); the
// rest goes back, and later arenas are plain mmaps.
void CloseHugeArenaRegion() {
  if (!g_arena_region) return;
  size_t keep = (g_arena_used + kHugePage - 1) & ~(kHugePage - 1);
  if (keep < kArenaRegionBytes) munmap(g_arena_region + keep, kArenaRegionBytes - keep);
  g_arena_region = nullptr;
}

}  // namespace

bool InitInterpreter(bool huge_arenas, std::string* error) {
  PyPreConfig pre;
  PyPreConfig_InitIsolatedConfig(&pre);
  pre.utf8_mode = 1;  // open() and the std streams speak UTF-8 whatever the locale
  PyStatus st = Py_PreInitialize(&pre);
  if (PyStatus_Exception(st)) {
    *error = "Py_PreInitialize failed";
    return false;
  }
  if (huge_arenas) UseHugeArenaRegion();
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  // The prefix is the one of the interpreter we were built against, never
  // whatever `python3` is first on PATH.
  PyConfig_SetBytesString(&config, &config.home, MCP_EXEC_PYTHON_HOME);
  // sys.executable: what subprocess/multiprocessing users expect to re-run.
  std::string exe = std::string(MCP_EXEC_PYTHON_HOME) + "/bin/python3";
  PyConfig_SetBytesString(&config, &config.executable, exe.c_str());
  PyConfig_SetBytesString(&config, &config.program_name, exe.c_str());
  config.install_signal_handlers = 1;  // runners get CPython's usual SIGINT/SIGPIPE setup
  config.write_bytecode = 0;
  config.site_import = 1;
  try {
    py::initialize_interpreter(&config, 0, nullptr, false);
  } catch (const std::exception& e) {
    *error = std::string("the interpreter did not start: ") + e.what();
    return false;
  }
  return true;
}

namespace {

// The package mcp_exec_runtime from the sources compiled in: each module is
// put in sys.modules before it runs, as an import would, so the relative
// imports between them find it there (no finder, no file).
py::object LoadRuntime() {
  py::module_ types = py::module_::import("types");
  py::object builtins = py::module_::import("builtins");
  py::object modules = py::module_::import("sys").attr("modules");
  // The runtime hides its own frames from tracebacks by this name (every
  // module's), and the server's crash report drops them by it too.
  const char* filename = "<mcp_exec_runtime>";
  const char* package_name = "mcp_exec_runtime";
  auto load = [&](const RuntimeModule& m, py::object into) {
    py::object code = builtins.attr("compile")(py::str(m.source), filename, "exec");
    builtins.attr("exec")(code, into.attr("__dict__"));
  };
  py::object package = types.attr("ModuleType")(package_name);
  package.attr("__file__") = filename;
  package.attr("__path__") = py::list();
  package.attr("__package__") = package_name;
  modules[package_name] = package;
  const RuntimeModule* init = nullptr;
  for (size_t i = 0; i < kRuntimeModuleCount; ++i) {
    const RuntimeModule& m = kRuntimeModules[i];
    if (std::string(m.name) == "__init__") {
      init = &m;
      continue;
    }
    const std::string full = std::string(package_name) + "." + m.name;
    py::object mod = types.attr("ModuleType")(full);
    mod.attr("__file__") = filename;
    mod.attr("__package__") = package_name;
    modules[py::str(full)] = mod;
    load(m, mod);
    package.attr(m.name) = mod;
  }
  if (init != nullptr) load(*init, package);
  return package;
}

}  // namespace

bool WarmUp(const std::vector<std::string>& preload, const std::vector<std::string>& site,
            std::string* report, std::string* error) {
  try {
    py::list names, dirs;
    for (const std::string& n : preload) names.append(py::str(n));
    for (const std::string& d : site) dirs.append(py::str(d));
    py::object result = LoadRuntime().attr("warm_up")(names, dirs);
    *report = py::module_::import("json").attr("dumps")(result).cast<std::string>();
    return true;
  } catch (py::error_already_set& e) {
    // The runtime's own message (a preload that failed names its module).
    *error = e.matches(PyExc_RuntimeError) ? py::str(e.value()).cast<std::string>()
                                           : std::string("python warm-up failed: ") + e.what();
    return false;
  }
}

MemoryShape ReadMemoryShape() {
  MemoryShape m;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) ++m.mappings;
  std::ifstream rollup("/proc/self/smaps_rollup");
  while (std::getline(rollup, line)) {
    std::istringstream in(line);
    std::string key;
    int64_t kib = 0;
    in >> key >> kib;
    if (key == "Rss:") m.rss_kib = kib;
    if (key == "AnonHugePages:") m.anon_huge_kib = kib;
  }
  return m;
}

int64_t CollapseHeapToHugePages() {
  CloseHugeArenaRegion();
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  while (std::getline(maps, line)) {
    // start-end perms offset dev inode [path]: private, writable, and no
    // file behind it (the heap, malloc's and the interpreter's arenas).
    std::istringstream in(line);
    std::string span, perms, offset, dev, inode, path;
    in >> span >> perms >> offset >> dev >> inode >> path;
    if (perms.size() < 4 || perms[1] != 'w' || perms[3] != 'p') continue;
    if (!(path.empty() || path == "[heap]")) continue;
    uintptr_t start = std::stoull(span.substr(0, span.find('-')), nullptr, 16);
    uintptr_t end = std::stoull(span.substr(span.find('-') + 1), nullptr, 16);
    start = (start + kHuge - 1) & ~(kHuge - 1);
    end &= ~(kHuge - 1);
    if (end > start) ranges.emplace_back(start, end);
  }
  int64_t collapsed = 0;
  for (auto [start, end] : ranges) {
    void* p = reinterpret_cast<void*>(start);  // NOLINT(performance-no-int-to-ptr)
    if (madvise(p, end - start, MADV_HUGEPAGE) != 0) continue;
    // Synchronous (Linux 6.1); where it is missing, khugepaged may still
    // collapse the range later.
    if (madvise(p, end - start, 25 /* MADV_COLLAPSE */) == 0) {
      collapsed += static_cast<int64_t>(end - start);
    }
  }
  return collapsed;
}

namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
struct sigaction g_previous[NSIG];  // faulthandler's handlers
PyObject* g_crash_flush = nullptr;  // mcp_exec_runtime._crash_flush
volatile sig_atomic_t g_crashing = 0;

void OnFatalSignal(int sig, siginfo_t* info, void* context) {
  // faulthandler first: it prints the traceback and re-raises the signal,
  // which stays blocked until this handler returns, and then kills.
  const struct sigaction& prev = g_previous[sig];
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
  }
  if (!g_crashing && g_crash_flush) {
    // Not async-signal-safe, and it does not have to be: the process is
    // dying either way; if this crashes too, the signal is blocked and the
    // kernel kills at once, the traceback already written.
    g_crashing = 1;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject* r = PyObject_CallNoArgs(g_crash_flush);
    Py_XDECREF(r);
    PyErr_Clear();
    PyGILState_Release(gil);
  }
  signal(sig, SIG_DFL);
  raise(sig);  // delivered when this handler returns, if faulthandler did not
}

}  // namespace

namespace {

PyObject* g_flush_streams = nullptr;  // mcp_exec_runtime._flush_streams

void* FlusherMain(void*) {
  for (;;) {
    timespec period{0, 50L * 1000 * 1000};
    while (nanosleep(&period, &period) != 0 && errno == EINTR) {
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject* r = PyObject_CallNoArgs(g_flush_streams);
    Py_XDECREF(r);
    PyErr_Clear();
    PyGILState_Release(gil);
  }
  return nullptr;
}

// A native thread, not a Python one: it needs the GIL only when it flushes,
// so starting it costs no hand-over on the call's path.
void StartFlusher(const py::object& rt) {
  g_flush_streams = py::object(rt.attr("_flush_streams")).release().ptr();
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // signals stay the main thread's
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, size_t{256} * 1024);
  pthread_t thread;
  pthread_create(&thread, &attr, FlusherMain, nullptr);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

void InstallCrashFlush() {
  try {
    py::object rt = py::module_::import("sys").attr("modules")["mcp_exec_runtime"];
    g_crash_flush = py::object(rt.attr("_crash_flush")).release().ptr();
  } catch (py::error_already_set&) {
    return;
  }
  for (int sig : kFatalSignals) {
    struct sigaction sa {};
    sa.sa_sigaction = OnFatalSignal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &g_previous[sig]);
  }
}

void Prefault(int level) {
  try {
    py::module_::import("sys").attr("modules")["mcp_exec_runtime"].attr("prefault")(level);
  } catch (py::error_already_set&) {
    PyErr_Clear();  // only a cost saved, never a reason to fail the run
  }
}

void BeforeFork() { PyOS_BeforeFork(); }
void AfterForkInChild() { PyOS_AfterFork_Child(); }
void AfterForkInParent() { PyOS_AfterFork_Parent(); }

namespace {

// Calls the runtime's run(...) or session_cell(...) with the input's fields
// and the extra arguments; (status, reason) back.
template <typename... Extra>
int CallRuntime(const char* function, const RunInput& in, std::string* reason, Extra... extra) {
  reason->clear();
  try {
    py::object rt = py::module_::import("sys").attr("modules")["mcp_exec_runtime"];
    py::dict limits;
    for (const auto& [name, value] : in.limits) limits[py::str(name)] = value;
    py::list files;
    for (const auto& [path, data] : in.files) {
      files.append(py::make_tuple(py::str(path), py::bytes(data)));
    }
    static bool flusher_started = false;
    if (!flusher_started) StartFlusher(rt);
    flusher_started = true;
    py::tuple result = rt.attr(function)(py::str(in.code), py::str(in.cwd), in.results_fd,
                                         in.tools_fd, limits, files, extra...);
    *reason = result[1].cast<std::string>();
    return result[0].cast<int>();
  } catch (py::error_already_set& e) {
    e.restore();
    PyErr_Print();
    return 1;
  }
}

}  // namespace

int RunCode(const RunInput& in, std::string* reason) { return CallRuntime("run", in, reason); }

int RunCell(const RunInput& in, int cell, std::string* reason) {
  return CallRuntime("session_cell", in, reason, cell);
}

void WithoutGil(void (*wait)(void*), void* arg) {
  py::gil_scoped_release released;
  wait(arg);
}

void DropPendingInterrupt() {
  if (PyErr_CheckSignals() != 0) PyErr_Clear();
}

}  // namespace mcpexec::embed
