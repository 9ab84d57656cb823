// Built into the server only by the sanitizer leg (MCP_EXEC_SANITIZE): the
// sanitizers' options, compiled in because the supervisor hands the zygote
// a minimal environment of its own (no *SAN_OPTIONS reaches it) and a run
// sees none of the server's environment.
//
// - Reports go to MCP_EXEC_SANITIZER_REPORTS/<tool>.<pid>, one file per
//   process that found something; scripts/sanitize.sh fails on any file. A
//   runner after lockdown cannot open that path (Landlock, its own mount
//   namespace); the sanitizer then reports on its stderr, which is the run's
//   stderr, and the tests see it there.
// - Fatal signals are left to the kernel: the caller's code may crash on
//   purpose (the escape suite does), and that is a run's result, not a bug
//   of ours.
// - A run's allocation that passes its memory limit fails the way it does
//   without the sanitizer (Python's MemoryError), and the quarantine of
//   freed memory is small: the limits are the run's, not ASan's.
// - Leaks are checked in the supervisor and the zygote when they exit.
//   CPython keeps its interpreter alive until the process ends, by design:
//   what libpython allocated is not reported.

#ifndef MCP_EXEC_SANITIZER_REPORTS
#error "MCP_EXEC_SANITIZER_REPORTS is set by CMakeLists.txt with MCP_EXEC_SANITIZE"
#endif

// The names are the sanitizer runtimes' own hooks (weak symbols they call at
// start-up), hence reserved identifiers.
extern "C" {

// NOLINTNEXTLINE(bugprone-reserved-identifier)
const char* __asan_default_options() {
  return "log_path=" MCP_EXEC_SANITIZER_REPORTS
         "/asan:halt_on_error=1:detect_leaks=1:handle_segv=0:handle_sigbus=0:"
         "handle_sigfpe=0:handle_sigill=0:handle_abort=0:allow_user_segv_handler=1:"
         "detect_stack_use_after_return=0:allocator_may_return_null=1:quarantine_size_mb=16";
}

// NOLINTNEXTLINE(bugprone-reserved-identifier)
const char* __ubsan_default_options() {
  return "log_path=" MCP_EXEC_SANITIZER_REPORTS "/ubsan:print_stacktrace=1:halt_on_error=1";
}

// NOLINTNEXTLINE(bugprone-reserved-identifier)
const char* __lsan_default_suppressions() {
  return "leak:libpython3\n"
         "leak:_PyObject_\n"
         "leak:PyMem_\n"
         "leak:/usr/lib/python3/dist-packages/\n";
}

}  // extern "C"
