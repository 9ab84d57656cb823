#include "embed/python.h"

#include <Python.h>
#include <pthread.h>
#include <pybind11/embed.h>
#include <signal.h>

#include <cerrno>
#include <ctime>

namespace py = pybind11;

namespace mcpexec {
extern const char kRuntimeSource[];  // runtime_source.cc, generated from python_runtime/
}

namespace mcpexec::embed {

bool InitInterpreter(std::string* error) {
  PyPreConfig pre;
  PyPreConfig_InitIsolatedConfig(&pre);
  pre.utf8_mode = 1;  // open() and the std streams speak UTF-8 whatever the locale
  PyStatus st = Py_PreInitialize(&pre);
  if (PyStatus_Exception(st)) {
    *error = "Py_PreInitialize failed";
    return false;
  }
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

py::object LoadRuntime() {
  py::module_ types = py::module_::import("types");
  py::object mod = types.attr("ModuleType")("mcp_exec_runtime");
  py::object builtins = py::module_::import("builtins");
  // The runtime hides its own frames from tracebacks by this name.
  const char* filename = "<mcp_exec_runtime>";
  mod.attr("__file__") = filename;
  py::object code = builtins.attr("compile")(py::str(kRuntimeSource), filename, "exec");
  builtins.attr("exec")(code, mod.attr("__dict__"));
  py::module_::import("sys").attr("modules")["mcp_exec_runtime"] = mod;
  return mod;
}

}  // namespace

bool WarmUp(std::string* report, std::string* error) {
  try {
    py::object result = LoadRuntime().attr("warm_up")();
    *report = py::module_::import("json").attr("dumps")(result).cast<std::string>();
    return true;
  } catch (py::error_already_set& e) {
    *error = std::string("python warm-up failed: ") + e.what();
    return false;
  }
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

void BeforeFork() { PyOS_BeforeFork(); }
void AfterForkInChild() { PyOS_AfterFork_Child(); }
void AfterForkInParent() { PyOS_AfterFork_Parent(); }

namespace {

// Calls the runtime's run(...) or session_cell(...) with the input's fields
// and the extra arguments; (status, reason) back.
template <typename... Extra>
int CallRuntime(const char* function, const RunInput& in, bool* memory_error, Extra... extra) {
  *memory_error = false;
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
    py::tuple result = rt.attr(function)(py::str(in.code), py::str(in.cwd), in.results_fd, limits,
                                         files, extra...);
    *memory_error = result[1].cast<std::string>() == "memory";
    return result[0].cast<int>();
  } catch (py::error_already_set& e) {
    e.restore();
    PyErr_Print();
    return 1;
  }
}

}  // namespace

int RunCode(const RunInput& in, bool* memory_error) { return CallRuntime("run", in, memory_error); }

int RunCell(const RunInput& in, int cell, bool* memory_error) {
  return CallRuntime("session_cell", in, memory_error, cell);
}

void WithoutGil(void (*wait)(void*), void* arg) {
  py::gil_scoped_release released;
  wait(arg);
}

void DropPendingInterrupt() {
  if (PyErr_CheckSignals() != 0) PyErr_Clear();
}

}  // namespace mcpexec::embed
