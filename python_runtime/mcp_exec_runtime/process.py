"""What a runner sets up for the code: fresh streams, reseeded generators,
the environment, a fresh ``__main__``, the exit status as CPython computes
it, the traceback without the runtime's frames, and the source tracebacks
read."""

import atexit
import builtins
import gc
import io
import linecache
import os
import sys
import types

MAIN_FILENAME = "main.py"


def _reset_streams():
    # The runner's fds 0/1/2 are the supervisor's pipes; give Python fresh
    # stream objects over them, as CPython would at start-up in UTF-8 mode.
    sys.stdin = sys.__stdin__ = open(
        0, "r", encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stdout = sys.__stdout__ = open(
        1, "w", encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stderr = sys.__stderr__ = open(
        2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)


# Every generator state made in the zygote (by the promised packages, by an
# operator's MCP_EXEC_PRELOAD modules at import: sympy's, say), found once by
# _find_generators; each run reseeds all of them.
_generators = []


def _generator_kinds():
    import random

    numpy = sys.modules.get("numpy")
    if numpy is None:
        return random, None
    return random, numpy.random


def _find_generators():
    random, nprandom = _generator_kinds()
    kinds = (random.Random,)
    # What _reseed seeds anyway (the global generators), and the bit
    # generators of the ones found (seeded with them), are left out.
    skip = {id(random._inst)}
    if nprandom is not None:
        kinds += (nprandom.RandomState, nprandom.Generator, nprandom.BitGenerator)
        skip.update((id(nprandom.mtrand._rand), id(nprandom.mtrand._rand._bit_generator)))
    found = [obj for obj in gc.get_objects()
             if isinstance(obj, kinds) and not isinstance(obj, random.SystemRandom)
             and id(obj) not in skip]
    for obj in found:
        if nprandom is not None and isinstance(obj, nprandom.RandomState):
            skip.add(id(obj._bit_generator))
        elif nprandom is not None and isinstance(obj, nprandom.Generator):
            skip.add(id(obj.bit_generator))
    return [obj for obj in found if id(obj) not in skip]


def _reseed_one(gen, random, nprandom):
    if isinstance(gen, random.Random):
        gen.seed()  # from os.urandom
    elif isinstance(gen, nprandom.RandomState):
        gen.seed()  # from the OS's entropy
    elif isinstance(gen, nprandom.Generator):
        gen.bit_generator.state = type(gen.bit_generator)().state
    else:
        gen.state = type(gen)().state


def _reseed():
    # A forked child inherits the zygote's generator states: without this,
    # every run would print the same "random" numbers (and a preloaded
    # module's keys: sympy made the same DH private key in every run).
    random, nprandom = _generator_kinds()
    random.seed()
    if nprandom is not None:
        nprandom.seed()
    for gen in _generators:
        try:
            _reseed_one(gen, random, nprandom)
        except Exception:
            pass
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
    _register_source(MAIN_FILENAME, code)
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


def _register_source(filename, code):
    # Tracebacks read source through linecache; the code is never written to
    # the working directory, so register it (mtime None: never invalidated).
    # The lines as linecache would read them from a file (universal newlines
    # only: str.splitlines would also split at \f or U+2028 and shift every
    # later line number), and the last one with its newline: without it the
    # traceback's carets land a column to the right.
    lines = io.StringIO(code, newline=None).readlines()
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[filename] = (len(code), None, lines, filename)
