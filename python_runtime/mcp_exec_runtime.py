"""The Python half of mcp-exec: warm-up in the zygote, and the run of one
caller's snippet in a forked runner.

This file is compiled into the mcp-exec binary at build time (see
CMakeLists.txt); the zygote executes it as the module ``mcp_exec_runtime``.
The C++ side calls exactly two functions:

* ``warm_up()`` once in the zygote, before any fork: imports the sandbox's
  packages, fills the caches they would otherwise fill lazily after lockdown,
  freezes the heap for copy-on-write, and returns a JSON-able report.
* ``run(code, workdir)`` in every runner, after its lockdown: runs the code as
  ``__main__`` and returns the process exit status as CPython would compute it.
"""

import atexit
import builtins
import gc
import io
import linecache
import os
import sys
import types

# (import name, distribution name) of every package the tool promises.
PACKAGES = (
    ("numpy", "numpy"),
    ("pandas", "pandas"),
    ("yaml", "PyYAML"),
    ("jinja2", "Jinja2"),
    ("PIL", "Pillow"),
    ("matplotlib", "matplotlib"),
)

# Standard-library modules a snippet commonly uses. Importing them in the
# zygote makes them free in every run (the pages are shared copy-on-write).
_STDLIB_WARM = (
    "argparse", "asyncio", "base64", "bisect", "collections", "concurrent.futures",
    "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib",
    "enum", "fractions", "functools", "glob", "hashlib", "heapq", "html", "itertools",
    "json", "math", "multiprocessing", "multiprocessing.pool", "operator", "pathlib",
    "pickle", "pprint", "queue", "random", "re", "shutil", "signal", "sqlite3",
    "statistics", "string", "struct", "subprocess", "tempfile", "textwrap",
    "threading", "time", "traceback", "typing", "unicodedata", "uuid", "zipfile",
    "zlib", "xml.etree.ElementTree", "urllib.parse", "io", "gzip", "tarfile",
)

MAIN_FILENAME = "main.py"


def _import_packages():
    import importlib

    report = {}
    for module, dist in PACKAGES:
        try:
            mod = importlib.import_module(module)
        except Exception as exc:  # reported, never fatal: the tool says what is really there
            report[dist] = {"available": False, "error": "%s: %s" % (type(exc).__name__, exc)}
            continue
        report[dist] = {"available": True, "version": str(getattr(mod, "__version__", "unknown"))}
    return report


def _warm_caches(report):
    import importlib

    for name in _STDLIB_WARM:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    import platform

    platform.processor()
    platform.platform()
    if report.get("numpy", {}).get("available"):
        import numpy

        numpy.random.rand(4)
        numpy.linalg.inv(numpy.eye(3))
    if report.get("pandas", {}).get("available"):
        import pandas

        frame = pandas.DataFrame({"k": [1, 1, 2], "v": [1.0, 2.0, 3.0]})
        frame.groupby("k").sum().merge(frame, on="k").to_csv(io.StringIO())
        frame.describe()
    if report.get("matplotlib", {}).get("available"):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        # Draw once so the font cache, the Agg renderer and the PNG writer are
        # loaded here and not in every run.
        fig, ax = plt.subplots()
        ax.plot([0, 1, 2], [0, 1, 4], label="warm")
        ax.set_title("warm-up")
        ax.legend()
        fig.savefig(io.BytesIO(), format="png")
        plt.close(fig)
    if report.get("Pillow", {}).get("available"):
        from PIL import Image

        Image.new("RGB", (8, 8)).resize((4, 4)).save(io.BytesIO(), format="PNG")
    if report.get("Jinja2", {}).get("available"):
        import jinja2

        jinja2.Template("{{ x }}").render(x=1)
    if report.get("PyYAML", {}).get("available"):
        import yaml

        yaml.safe_load(yaml.safe_dump({"a": [1, 2]}))


def warm_up():
    """Runs once in the zygote. Returns the report the server publishes."""
    report = _import_packages()
    _warm_caches(report)
    # Everything imported so far is immortal for the zygote's children: freeze
    # it so a child's gc never touches (and so copies) those pages.
    gc.collect()
    gc.freeze()
    return {
        "python": "%d.%d.%d" % sys.version_info[:3],
        "packages": report,
        # The promised packages in their order (the C++ side keeps no list).
        "package_order": [dist for _, dist in PACKAGES],
    }


def _reset_streams():
    # The runner's fds 0/1/2 are the supervisor's pipes; give Python fresh
    # stream objects over them, as CPython would at start-up in UTF-8 mode.
    sys.stdin = sys.__stdin__ = open(
        0, "r", encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stdout = sys.__stdout__ = open(
        1, "w", encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stderr = sys.__stderr__ = open(
        2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)


def _reseed():
    # A forked child inherits the zygote's generator states: without this,
    # every run would print the same "random" numbers.
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    # multiprocessing's authkey was made once in the zygote: a run that learnt
    # it could speak to another run's managers and listeners. A fresh one each.
    mp_process = sys.modules.get("multiprocessing.process")
    if mp_process is not None:
        mp_process.current_process().authkey = os.urandom(32)


def _set_environment(workdir):
    for key in ("HOME", "TMPDIR", "PWD"):
        os.environ[key] = workdir
    import tempfile

    tempfile.tempdir = None  # recomputed from TMPDIR on next use


def _fresh_main(code):
    main = types.ModuleType("__main__")
    main.__file__ = MAIN_FILENAME
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    sys.argv = [MAIN_FILENAME]
    # Tracebacks read source through linecache; the code is never written to
    # the working directory, so register it (mtime None: never invalidated).
    # The lines as linecache would read them from a file (universal newlines
    # only: str.splitlines would also split at \f or U+2028 and shift every
    # later line number), and the last one with its newline: without it the
    # traceback's carets land a column to the right.
    lines = io.StringIO(code, newline=None).readlines()
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[MAIN_FILENAME] = (len(code), None, lines, MAIN_FILENAME)
    return main


def _system_exit_status(exc):
    # The mapping of Python/pythonrun.c:_Py_HandleSystemExit.
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        if -(2 ** 63) <= code < 2 ** 63:
            return code & 0xFF
        return 0xFF
    try:
        sys.stderr.write(str(code) + "\n")
    except Exception:
        pass
    return 1


def _print_exception():
    etype, value, tb = sys.exc_info()
    # Hide this module's frames: the traceback starts in the caller's code,
    # as it would for `python3 main.py`.
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    if value is not None:
        value = value.with_traceback(tb)
    try:
        if sys.excepthook is sys.__excepthook__:
            # The C printer reads source lines from files; the code lives in
            # linecache, which the traceback module reads.
            import traceback

            traceback.print_exception(etype, value, tb)
        else:
            sys.excepthook(etype, value, tb)
    except Exception:
        pass


def _finish(status):
    """What CPython does between the end of __main__ and exit()."""
    import threading

    try:
        threading._shutdown()  # join non-daemon threads
    except BaseException:
        _print_exception()
    try:
        atexit._run_exitfuncs()
    except SystemExit as exc:
        status = _system_exit_status(exc)
    except BaseException:
        _print_exception()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            # Like CPython: a flush error at exit (e.g. a closed pipe) makes
            # the exit status 120 unless it already failed.
            if status == 0:
                status = 120
    return status


def run(code, workdir):
    """Runs in the runner after lockdown. Returns (exit status 0-255, reason):
    reason is "memory" when an uncaught MemoryError ended the run, else ""."""
    _reset_streams()
    _reseed()
    _set_environment(workdir)
    # `python3 main.py` puts the script's folder first on sys.path: modules
    # the snippet writes into its working directory are importable.
    sys.path.insert(0, workdir)
    main = _fresh_main(code)
    status, reason = 0, ""
    try:
        exec(compile(code, MAIN_FILENAME, "exec"), main.__dict__)
    except SystemExit as exc:
        status = _system_exit_status(exc)
    except BaseException as exc:
        _print_exception()
        status = 1
        if isinstance(exc, MemoryError):
            reason = "memory"
    return _finish(status), reason
