"""The Python half of mcp-exec: warm-up in the zygote, and the run of one
caller's snippet in a forked runner.

This package is compiled into the mcp-exec binary at build time (see
CMakeLists.txt); the zygote loads it as the package ``mcp_exec_runtime``
(embed/python.cc), one module per concern: ``warm`` (the zygote's warm-up),
``process`` (a runner's set-up and exit), ``results`` (figures, files and
the last value on the results channel), ``streams``, ``notebook`` (notebook
habits), ``tools`` (code mode), ``runner`` (one-shot runs) and ``session``.
The C++ side calls exactly two functions:

* ``warm_up()`` once in the zygote, before any fork: imports the sandbox's
  packages, fills the caches they would otherwise fill lazily after lockdown,
  freezes the heap for copy-on-write, and returns a JSON-able report.
* ``run(code, workdir, results_fd, tools_fd, limits, files)`` in every
  runner, after its lockdown: writes the caller's input files, runs the code as
  ``__main__`` (the value of a last expression kept, as a notebook cell
  shows it), sends figures, ``out/`` files and that value to the supervisor
  over ``results_fd``, and returns the exit status as CPython would compute
  it.

Results travel as records on ``results_fd``, a pipe of the supervisor's
making (never stdout), and code mode's calls as frames on ``tools_fd``
(-1 without code mode): both formats are made in frames.py and documented
in src/ipc/ (result_records.h, tool_frames.h). The supervisor bounds and
checks everything it reads; the limits here only spare work.
"""

# What the C++ side calls (embed/python.cc).
from .runner import run
from .session import session_cell
from .streams import _crash_flush, _flush_streams
from .warm import prefault, warm_up

__all__ = ["run", "session_cell", "_crash_flush", "_flush_streams", "prefault", "warm_up"]
