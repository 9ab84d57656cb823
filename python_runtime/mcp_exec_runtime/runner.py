"""One-shot runs: what ``run()`` does in a runner after its lockdown."""

import builtins
import errno
import os
import sys

from . import results as _results
from .process import (MAIN_FILENAME, _finish, _fresh_main, _print_exception, _reseed,
    _reset_streams, _set_environment, _system_exit_status)
from .results import (_counts, _noting_saves_to_out, _send, _send_figures_left_open,
    _send_out_files, _send_step, _show, _write_input_files, display)
from .streams import _guard_flush_across_fork
from .notebook import _IPythonShim, _execute, _magic, _shell
from . import tools as _tools
from .tools import _ToolsFinder

def _prepare_process(workdir, results_fd, tools_fd, limits):
    """What a runner sets up once, before its first (or only) code runs."""
    # The server's bounds, by name (model/config.h holds their defaults).
    _results.configure(results_fd, limits)
    _tools.configure(tools_fd)
    _reset_streams()
    _guard_flush_across_fork()
    _reseed()
    _set_environment(workdir)
    builtins.display = display
    builtins.__mcp_exec_shell__ = _shell
    builtins.__mcp_exec_magic__ = _magic
    sys.meta_path.append(_IPythonShim())
    sys.meta_path.insert(0, _ToolsFinder())
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.show = _show
    figure = sys.modules.get("matplotlib.figure")
    if figure is not None and not hasattr(figure.Figure.savefig, "_mcp_exec_original"):
        figure.Figure.savefig = _noting_saves_to_out(figure.Figure.savefig, workdir)
    # `python3 main.py` puts the script's folder first on sys.path: modules
    # the snippet writes into its working directory are importable.
    sys.path.insert(0, workdir)


def _make_out(workdir):
    """out/ is there before the code runs (every run, every cell), so that
    open("out/report.csv", "w") and savefig("out/x.png") work as written. An
    input file named out, or a full disk, leaves it as it is."""
    try:
        os.mkdir(os.path.join(workdir, "out"), 0o755)
    except OSError:
        pass


def _run_guarded(workdir, files, code, main, filename=MAIN_FILENAME):
    """Writes the input files, makes out/ and runs the code. Returns
    (status, reason)."""
    status, reason = 0, ""
    try:
        _write_input_files(workdir, files)
        _make_out(workdir)
        _execute(code, main, filename)
    except SystemExit as exc:
        status = _system_exit_status(exc)
    except BaseException as exc:
        _print_exception()
        status = 1
        if isinstance(exc, MemoryError):
            reason = "memory"
        elif isinstance(exc, OSError) and exc.errno == errno.EFBIG:
            reason = "file_size"
    return status, reason


def run(code, workdir, results_fd, tools_fd, limits, files):
    """Runs in the runner after lockdown. Returns (exit status 0-255, reason):
    reason is "memory" when an uncaught MemoryError ended the run, "file_size"
    when an uncaught OSError EFBIG did (a write past the disk limit), else ""."""
    _prepare_process(workdir, results_fd, tools_fd, limits)
    main = _fresh_main(code)
    status, reason = _run_guarded(workdir, files, code, main)
    # Figures first: matplotlib's own atexit hook (run by _finish) destroys
    # every figure. Files after, so that what exit handlers and the last
    # threads write is in out/ too.
    _send_step(_send_figures_left_open)
    status = _finish(status)
    _send_step(lambda: _send_out_files(workdir))
    if _counts["images_omitted"]:
        _send("images_omitted", {"count": _counts["images_omitted"]})
    return status, reason
