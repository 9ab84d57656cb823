#include "embed/python.h"

#include <Python.h>
#include <pybind11/embed.h>

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

void BeforeFork() { PyOS_BeforeFork(); }
void AfterForkInChild() { PyOS_AfterFork_Child(); }
void AfterForkInParent() { PyOS_AfterFork_Parent(); }

int RunCode(const std::string& code, const std::string& cwd, bool* memory_error) {
  *memory_error = false;
  try {
    py::object rt = py::module_::import("sys").attr("modules")["mcp_exec_runtime"];
    py::tuple result = rt.attr("run")(py::str(code), py::str(cwd));
    *memory_error = result[1].cast<std::string>() == "memory";
    return result[0].cast<int>();
  } catch (py::error_already_set& e) {
    e.restore();
    PyErr_Print();
    return 1;
  }
}

}  // namespace mcpexec::embed
