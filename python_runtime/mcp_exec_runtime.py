"""The Python half of mcp-exec: warm-up in the zygote, and the run of one
caller's snippet in a forked runner.

This file is compiled into the mcp-exec binary at build time (see
CMakeLists.txt); the zygote executes it as the module ``mcp_exec_runtime``.
The C++ side calls exactly two functions:

* ``warm_up()`` once in the zygote, before any fork: imports the sandbox's
  packages, fills the caches they would otherwise fill lazily after lockdown,
  freezes the heap for copy-on-write, and returns a JSON-able report.
* ``run(code, workdir, results_fd, limits, files)`` in every runner, after
  its lockdown: writes the caller's input files, runs the code as
  ``__main__`` (the value of a last expression kept, as a notebook cell
  shows it), sends figures, ``out/`` files and that value to the supervisor
  over ``results_fd``, and returns the exit status as CPython would compute
  it.

Results travel as records on ``results_fd``, a pipe of the supervisor's
making (never stdout): the header's and the payload's lengths (4 bytes
each, little-endian), a JSON header with ``kind``, then the payload. The
frame alone says where the next record starts, so a header the supervisor
cannot parse costs only its own record. The supervisor bounds and checks
everything it reads; the limits here only spare work.
"""

import ast
import atexit
import builtins
import errno
import faulthandler
import gc
import io
import json
import linecache
import os
import re
import stat
import struct
import sys
import threading
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

# (import name, distribution name) of other packages common data work uses
# (DataFrame.to_markdown, read_excel, read_parquet, ...), reported with their
# versions when the image ships them, never imported here: a run imports them
# on first use, so they cost the zygote nothing.
EXTRAS = (
    ("tabulate", "tabulate"),
    ("openpyxl", "openpyxl"),
    ("xlrd", "xlrd"),
    ("pyarrow", "pyarrow"),
    ("scipy", "scipy"),
    ("sklearn", "scikit-learn"),
    ("statsmodels", "statsmodels"),
    ("seaborn", "seaborn"),
    ("sympy", "sympy"),
    ("networkx", "networkx"),
    ("bs4", "beautifulsoup4"),
    ("lxml", "lxml"),
    ("grep_ast", "grep-ast"),
    ("tree_sitter_language_pack", "tree-sitter-language-pack"),
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


def _find_extras():
    import importlib.metadata
    import importlib.util

    found = []
    for module, dist in EXTRAS:
        try:
            if importlib.util.find_spec(module) is None:
                continue
            version = importlib.metadata.version(dist)
        except Exception:
            continue
        found.append([dist, str(version)])
    return found


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


def _preload(names):
    """Imports the operator's extra modules (MCP_EXEC_PRELOAD) after the
    promised ones. One that fails to import stops the start, naming it."""
    import importlib
    import importlib.metadata

    loaded = {}
    for name in names:
        try:
            mod = importlib.import_module(name)
        except BaseException as exc:
            raise RuntimeError("MCP_EXEC_PRELOAD: module %r failed to import: %s: %s"
                               % (name, type(exc).__name__, exc)) from None
        version = getattr(mod, "__version__", None)
        if version is None:
            try:
                version = importlib.metadata.version(name.split(".")[0])
            except Exception:
                version = ""  # the standard library's modules have none
        loaded[name] = str(version)
    # What the preloaded modules import lazily on first use is warmed by
    # importing them; their objects join the frozen heap below.
    return loaded


def _add_site(dirs):
    """MCP_EXEC_PYTHON's site-packages (a venv of this Python's version):
    after the system's, so the promised packages stay the system's. Returns
    [name, version] of the distributions they hold (at most 100)."""
    import importlib.metadata
    import site

    found = []
    for d in dirs:
        site.addsitedir(d)
        for dist in importlib.metadata.distributions(path=[d]):
            name = dist.metadata["Name"]
            if name and len(found) < 100:
                found.append([name, str(dist.version)])
    return sorted(found, key=lambda nv: nv[0].lower())


def warm_up(preload=(), site_dirs=()):
    """Runs once in the zygote. Returns the report the server publishes."""
    lent = _add_site(site_dirs)
    report = _import_packages()
    _warm_caches(report)
    preloaded = _preload(preload)
    # A fatal signal in a run (a segfault in native code) leaves a
    # Python-level traceback on the run's stderr (fd 2 in every runner).
    faulthandler.enable(all_threads=False)
    _generators[:] = _find_generators()
    # Everything imported so far is immortal for the zygote's children: freeze
    # it so a child's gc never touches (and so copies) those pages.
    gc.collect()
    gc.freeze()
    return {
        "python": "%d.%d.%d" % sys.version_info[:3],
        "packages": report,
        # The promised packages in their order (the C++ side keeps no list).
        "package_order": [dist for _, dist in PACKAGES],
        "preloaded": [[name, version] for name, version in preloaded.items()],
        # Installed beyond the six: the known extras, then what
        # MCP_EXEC_PYTHON's environment lends.
        "extras": _merge_extras(_find_extras(), lent),
        "site": list(site_dirs),
    }


def _merge_extras(extras, lent):
    names = {name.lower() for name, _ in extras} | {dist.lower() for _, dist in PACKAGES}
    return extras + [[n, v] for n, v in lent if n.lower() not in names]


_REHEARSAL = "out = []\nprint(1, file=buf)\nout.extend(i * i for i in range(10))\nout[-1]\n"


def _rehearse():
    """The shared-heap writes of a run's own path (reseed, compile, exec,
    print, the last expression's repr, a result record, the traceback cache),
    done on scratch objects."""
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    buf = io.StringIO()
    scratch = {"__name__": "__mcp_exec_rehearsal__", "__builtins__": builtins, "buf": buf}
    lines = io.StringIO(_REHEARSAL, newline=None).readlines()
    linecache.cache["<rehearsal>"] = (len(_REHEARSAL), None, lines, "<rehearsal>")
    tree = compile(_REHEARSAL, "<rehearsal>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    last = tree.body.pop()
    exec(compile(tree, "<rehearsal>", "exec", dont_inherit=True), scratch)
    value = eval(compile(ast.Expression(last.value), "<rehearsal>", "eval", dont_inherit=True),
                 scratch)
    head = json.dumps({"kind": "result", "bytes": len(repr(value))}).encode()
    struct.pack("<I", len(head))
    os.path.join(os.getcwd(), "out")
    del linecache.cache["<rehearsal>"]


def prefault(level):
    """Runs in a spare runner, forked and locked down ahead, before its run
    arrives, so that copy-on-write faults of pages a run would write are
    taken now, off the request's path. Level 1: the run's own path
    (_rehearse); level 2: also a small pandas groupby and numpy op. Nothing of
    it is visible to the run: its objects are dropped, its module is not
    __main__, and the run reseeds every generator."""
    _rehearse()
    if level >= 2:
        pandas = sys.modules.get("pandas")
        if pandas is not None:
            frame = pandas.DataFrame({"k": [1, 1, 2], "v": [1.0, 2.0, 3.0]})
            frame.groupby("k").v.sum().to_string()
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.arange(16).reshape(4, 4).sum(axis=0)
    gc.collect(0)


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


# --- Results: figures, files, the last expression, on the results channel ---

_results_fd = -1
_limits = {}
_counts = {"images": 0, "images_omitted": 0}
_displayed = set()  # ids of figures already sent (display() or show())
_saved_to_out = set()  # ids of figures the code saved under out/ (sent as that file)


def _send(kind, meta, payload=b""):
    if _results_fd < 0:
        return
    # The frame: header and payload lengths, then both (results.cc reads it).
    head = json.dumps(dict(meta, kind=kind)).encode()
    try:
        _write_all(struct.pack("<II", len(head), len(payload)) + head + payload)
    except OSError:
        pass  # the supervisor stopped reading: what is left is dropped


def _png_bytes(render, max_bytes):
    """render(scale) -> PNG bytes; scaled down until it fits, else None."""
    scale = 1.0
    for _ in range(8):
        data = render(scale)
        if len(data) <= max_bytes:
            return data, scale < 1.0
        scale *= 0.7
    return None, True


def _emit_png(render):
    if _counts["images"] >= _limits["max_images"]:
        _counts["images_omitted"] += 1
        return
    try:
        data, scaled = _png_bytes(render, _limits["max_image_bytes"])
    except Exception:
        # The runtime's own failure to draw (a figure too big or broken to
        # render, no memory for the canvas): counted, never raised into the
        # caller's code.
        data, scaled = None, True
    if data is None:
        _counts["images_omitted"] += 1
        return
    _counts["images"] += 1
    _send("image", {"mimeType": "image/png", "scaled": scaled}, data)


def _is_figure(obj):
    figure = sys.modules.get("matplotlib.figure")
    return figure is not None and isinstance(obj, figure.Figure)


def _is_pil_image(obj):
    image = sys.modules.get("PIL.Image")
    return image is not None and isinstance(obj, image.Image)


# A figure is first drawn at most this many pixels (about 2000 x 2000): the
# canvas of a huge figure would not fit in the run's memory, and no model
# needs more to see a plot.
_MAX_FIGURE_PIXELS = 4_000_000


def _max_side():
    """The longest side an image may have (MCP_EXEC_MAX_IMAGE_SIDE; results.cc
    drops a PNG past it)."""
    return _limits.get("max_image_side", 2000)


def _show_figure(fig):
    _displayed.add(id(fig))
    dpi = fig.dpi
    width, height = fig.get_size_inches()
    pixels = width * height * dpi * dpi
    if pixels > _MAX_FIGURE_PIXELS:
        dpi *= (_MAX_FIGURE_PIXELS / pixels) ** 0.5
    # savefig rounds width x dpi: one pixel of room keeps the longer side
    # within the bound, and the aspect ratio is the figure's.
    dpi = min(dpi, (_max_side() - 1) / max(width, height, 1e-9))

    def render(scale):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi * scale)
        return buf.getvalue()

    _emit_png(render)


def _show_pil(img):
    fit = min(1.0, _max_side() / max(img.width, img.height, 1))

    def render(scale):
        scale *= fit
        shown = img
        if scale < 1.0:
            shown = img.resize((max(1, int(img.width * scale)), max(1, int(img.height * scale))))
        if shown.mode not in ("RGB", "RGBA", "L", "LA", "P", "1", "I;16"):
            shown = shown.convert("RGBA")
        buf = io.BytesIO()
        shown.save(buf, format="PNG")
        return buf.getvalue()

    _emit_png(render)


_DEFAULT_REPR = re.compile(r"^<[\w.]+ object( at 0x[0-9a-fA-F]+)?>$")


def _rich_text(obj):
    """The text a notebook would render for obj, when its repr would only say
    what it is: Markdown's source, or HTML's (IPython.display's HTML and
    Markdown, and objects with _repr_markdown_ or _repr_html_ but no repr of
    their own). None: its repr says more (a DataFrame's table, say)."""
    for method in ("_repr_markdown_", "_repr_html_"):
        render = getattr(obj, method, None)
        if not callable(render) or isinstance(obj, type):
            continue
        if method == "_repr_html_" and not _DEFAULT_REPR.match(repr(obj)):
            continue
        text = render()
        if isinstance(text, tuple):  # (data, metadata)
            text = text[0]
        if isinstance(text, str):
            return text
    return None


def _png_of(obj):
    render = getattr(obj, "_repr_png_", None)
    if not callable(render) or isinstance(obj, type):
        return None
    data = render()
    return data if isinstance(data, bytes) else None


def display(*objs, **_ignored):
    """Shows a matplotlib figure or a PIL image (or an object with
    _repr_png_) as an image in the result, prints Markdown and HTML objects
    as their source text, and the repr of anything else (as Jupyter's
    display() does)."""
    for obj in objs:
        if _is_figure(obj):
            _show_figure(obj)
        elif _is_pil_image(obj):
            _show_pil(obj)
        elif _png_of(obj) is not None:
            from PIL import Image

            _show_pil(Image.open(io.BytesIO(_png_of(obj))))
        else:
            text = _rich_text(obj)
            print(repr(obj) if text is None else text)


def _open_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    return [plt.figure(num) for num in plt.get_fignums()]


def _show(*args, **kwargs):
    """plt.show(): every open figure becomes an image, in creation order, and
    is closed (as in a notebook)."""
    plt = sys.modules["matplotlib.pyplot"]
    for fig in _open_figures():
        if id(fig) not in _displayed:
            _show_figure(fig)
        plt.close(fig)


def _send_last_value(value):
    if value is None:
        return
    if _is_figure(value) or _is_pil_image(value):
        display(value)
        return
    try:
        text = _rich_text(value)
        if text is None:
            text = repr(value)
    except (SystemExit, MemoryError, KeyboardInterrupt):
        raise  # they keep their meaning: an exit status, reason memory
    except BaseException:
        _print_exception()
        return
    # Any text comes back: lone surrogates and undecodable bytes escaped.
    data = text.encode("utf-8", "backslashreplace")
    cap = _limits["max_result_bytes"]
    _send("result", {"truncated": len(data) > cap}, data[:cap])


def _send_figures_left_open():
    # A figure the code saved under out/ comes back as that file: not a
    # second time as an image (plt.show() and display() still show it).
    for fig in _open_figures():
        if id(fig) not in _displayed and id(fig) not in _saved_to_out:
            _show_figure(fig)


def _noting_saves_to_out(savefig, workdir):
    """Figure.savefig, remembering a figure saved to a path under the run's
    out/."""
    out = os.path.join(os.path.realpath(workdir), "out") + os.sep

    def savefig_noted(fig, fname, *args, **kwargs):
        result = savefig(fig, fname, *args, **kwargs)
        try:
            if isinstance(fname, (str, bytes, os.PathLike)):
                if os.path.realpath(os.fsdecode(fname)).startswith(out):
                    _saved_to_out.add(id(fig))
        except (OSError, ValueError):
            pass
        return result
    savefig_noted.__doc__ = savefig.__doc__
    savefig_noted._mcp_exec_original = savefig
    return savefig_noted


def _escape_name(name):
    """A file name as results.cc's EscapeName shows it: bytes that are not
    UTF-8 as \\xNN, control and bidi characters as \\xNN or \\uNNNN."""
    out = []
    for ch in name:
        cp = ord(ch)
        if 0xDC80 <= cp <= 0xDCFF:  # an undecodable byte (surrogateescape)
            out.append("\\x%02x" % (cp - 0xDC00))
        elif cp < 0x20 or cp == 0x7F:
            out.append("\\x%02x" % cp)
        elif 0x80 <= cp <= 0x9F or cp in _HIDING or 0xD800 <= cp <= 0xDFFF:
            out.append("\\u%04x" % cp)
        else:
            out.append(ch)
    return "".join(out)


# Characters that reorder or hide text: a name holding one could show as
# another name.
_HIDING = frozenset([0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A, 0x202B, 0x202C, 0x202D,
                     0x202E, 0x2066, 0x2067, 0x2068, 0x2069])


def _natural(name):
    """Sort key: digit runs by their value, so f2 comes before f10."""
    return [(0, int(part), part) if part.isdigit() else (1, 0, part)
            for part in re.split(r"(\d+)", name) if part]


def _walk_out(workdir, unreadable):
    """(path relative to workdir, lstat) of every entry under out/ that is
    not a folder (regular files, and links, pipes or sockets, which are not
    returned but listed), in natural order; folders that cannot be listed
    are appended to `unreadable`."""
    root = os.path.join(workdir, "out")
    try:
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            return
    except OSError:
        return

    def onerror(err):
        if err.filename:
            unreadable.append(os.path.relpath(err.filename, workdir))

    for folder, dirs, names in os.walk(root, onerror=onerror, followlinks=False):
        dirs.sort(key=_natural)
        for name in sorted(names, key=_natural):
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            yield os.path.relpath(path, workdir), st


def _send_link(workdir, rel, size):
    """Streams a file too big to embed to the supervisor, which keeps it in
    its resource store (a resource_link in the result): the frame says its
    size at the start, so exactly that many bytes follow (zeros past an end
    the code moved meanwhile)."""
    fd = os.open(os.path.join(workdir, rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        head = json.dumps({"kind": "file", "path": rel, "link": True}).encode()
        _write_all(struct.pack("<II", len(head), size) + head)
        left = size
        while left:
            chunk = os.read(fd, min(left, 1 << 20)) or bytes(min(left, 1 << 20))
            _write_all(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)


def _write_all(data):
    data = memoryview(data)
    while data:
        data = data[os.write(_results_fd, data):]


def _send_out_files(workdir, only=None):
    """Sends the regular files under out/ (those in `only`, when given):
    embedded while they fit in max_out_bytes together, the rest as links
    (up to max_link_bytes together). What cannot come back is listed with
    why: count, bytes, name (not UTF-8, or holding control or bidi
    characters), unreadable (no permission)."""
    unreadable = []
    found, omitted = [], []
    for rel, st in _walk_out(workdir, unreadable):
        if only is not None and rel not in only:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append((rel, st.st_size))
        else:
            omitted.append({"path": _escape_name(rel), "bytes": 0, "why": "not_a_file"})
    omitted += [{"path": _escape_name(rel), "bytes": 0, "why": "unreadable"}
                for rel in unreadable if only is None or rel in only]
    max_files = _limits["max_out_files"]
    room = _limits["max_out_bytes"]
    link_room = _limits.get("max_link_bytes", 0)
    sent = 0
    for rel, size in found:
        if _escape_name(rel) != rel:
            omitted.append({"path": _escape_name(rel), "bytes": size, "why": "name"})
            continue
        if sent >= max_files:
            omitted.append({"path": rel, "bytes": size, "why": "count"})
            continue
        if size > room and 0 < size <= link_room and size < (1 << 32) and _results_fd >= 0:
            try:
                _send_link(workdir, rel, size)
            except OSError:
                if _results_fd >= 0:
                    omitted.append({"path": rel, "bytes": size, "why": "unreadable"})
                continue
            link_room -= size
            sent += 1
            continue
        if size > room:
            omitted.append({"path": rel, "bytes": size, "why": "bytes"})
            continue
        try:
            with open(os.path.join(workdir, rel), "rb") as f:
                data = f.read(room + 1)
        except OSError:
            omitted.append({"path": rel, "bytes": size, "why": "unreadable"})
            continue
        if len(data) > room:
            omitted.append({"path": rel, "bytes": len(data), "why": "bytes"})
            continue
        room -= len(data)
        sent += 1
        _send("file", {"path": rel}, data)
    if omitted:
        _send("files_omitted", {"files": omitted[:100], "count": len(omitted)})


def _send_step(step):
    try:
        step()
    except BaseException:
        _print_exception()


def _write_input_files(workdir, files):
    # The supervisor checked every path; checked again here, and written
    # without following links.
    for rel, data in files:
        parts = rel.split("/")
        if rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in rel:
            raise ValueError("bad input file path %r" % rel)
        if len(parts) > 1:
            os.makedirs(os.path.join(workdir, *parts[:-1]), exist_ok=True)
        fd = os.open(os.path.join(workdir, rel),
                     os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with open(fd, "wb") as f:
            f.write(data)


# --- Streams kept flushed ---

# The runner's native flusher thread (embed/python.cc) calls
# _flush_streams() every 50 ms, so that what the code printed before a
# deadline, a kill or a crash is in the pipe without making every print a
# write. It takes the GIL only then, so the code never waits for it; and a
# fork never happens mid-flush (a child would inherit a held buffer lock).
_flush_lock = threading.Lock()


def _flush_streams():
    with _flush_lock:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass


def _guard_flush_across_fork():
    os.register_at_fork(before=_flush_lock.acquire, after_in_parent=_flush_lock.release,
                        after_in_child=_flush_lock.release)


def _crash_flush():
    """Called by the native crash handler (a fatal signal): best effort."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


# --- Notebook habits: top-level await, _, !cmd, %timeit, %time, %pip ---


class _HTML:
    """IPython.display.HTML, as the shim has it: display() prints the source."""

    def __init__(self, data=None, url=None, filename=None, metadata=None):
        if data is None and filename is not None:
            with open(filename, encoding="utf-8") as f:
                data = f.read()
        self.data = "" if data is None else str(data)
        self.url = url

    def _repr_html_(self):
        return self.data

    def __repr__(self):
        return "<IPython.core.display.%s object>" % type(self).__name__


class _Markdown(_HTML):
    def _repr_markdown_(self):
        return self.data


class _Latex(_HTML):
    def _repr_markdown_(self):
        return self.data


class _Image:
    """IPython.display.Image of PNG or JPEG bytes or a file: shown as an image."""

    def __init__(self, data=None, url=None, filename=None, format=None, **_ignored):
        if isinstance(data, str) and filename is None and os.path.exists(data):
            data, filename = None, data
        if filename is not None:
            with open(filename, "rb") as f:
                data = f.read()
        self.data = data

    def _repr_png_(self):
        if not isinstance(self.data, bytes):
            return None
        from PIL import Image

        buf = io.BytesIO()
        Image.open(io.BytesIO(self.data)).save(buf, format="PNG")
        return buf.getvalue()


def _ipython_display_module(name):
    mod = types.ModuleType(name)
    mod.display = display
    mod.HTML, mod.Markdown, mod.Latex, mod.Image = _HTML, _Markdown, _Latex, _Image
    for cls in (_HTML, _Markdown, _Latex, _Image):
        cls.__name__ = cls.__qualname__ = cls.__name__.lstrip("_")
    mod.clear_output = lambda wait=False: None
    return mod


class _IPythonShim:
    """When IPython is not installed (it is not, by default): `from
    IPython.display import HTML, Markdown, Image, display` works as in a
    notebook, and get_ipython() is None, so libraries that look for a
    notebook see none. Last on sys.meta_path: a real IPython wins."""

    _NAMES = ("IPython", "IPython.display", "IPython.core", "IPython.core.display")

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self._NAMES:
            return None
        import importlib.machinery

        return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname in (
            "IPython", "IPython.core"))

    def create_module(self, spec):
        if spec.name.endswith("display"):
            return _ipython_display_module(spec.name)
        mod = types.ModuleType(spec.name)
        mod.__path__ = []
        if spec.name == "IPython":
            mod.get_ipython = lambda: None
            mod.display = display
            mod.__version__ = "0+mcp-exec-shim"
        return mod

    def exec_module(self, module):
        pass


# --- Code mode: `import mcp_tools` calls other MCP servers' tools ---
#
# The run's only way out is the tool channel the supervisor made for it (a
# socket pair: no network); frames are a little-endian u32 length and JSON
# (supervisor/tool_channel.h). The supervisor decides everything that
# matters (which tools, their arguments, the count, the result's size); this
# side only asks and unpacks.


class ToolError(Exception):
    """A nested tool call that gave no value: the tool reported an error, it is
    not allowed, its arguments do not fit its schema, or a limit was passed.
    The message says which, in plain words."""


ToolError.__module__ = "mcp_tools"  # as tracebacks and the agent should name it
_tools = {"lock": threading.Lock(), "next": 1, "catalog": None}


def _tools_io(frame):
    fd = _limits.get("tools_fd", -1)
    with _tools["lock"]:
        frame_id = _tools["next"]
        _tools["next"] += 1
        body = json.dumps(dict(frame, id=frame_id)).encode()
        limit = _limits.get("max_tool_frame_bytes", 0)
        if limit and len(body) > limit:
            raise ToolError("this call's arguments take %d bytes, more than the %d one call may "
                            "send (MCP_EXEC_MAX_TOOL_RESULT_BYTES sets it); pass less per call"
                            % (len(body), limit))
        try:
            data = struct.pack("<I", len(body)) + body
            while data:
                data = data[os.write(fd, data):]
            head = _read_exactly(fd, 4)
            reply = _read_exactly(fd, struct.unpack("<I", head)[0])
        except OSError as e:
            raise ToolError("the tool channel is closed (%s): tools can be called only while "
                            "an exec call runs" % (e.strerror or e)) from None
    try:
        answer = json.loads(reply)
    except ValueError:
        raise ToolError("the tool channel sent something that is not JSON") from None
    if not answer.get("ok"):
        raise ToolError(answer.get("error") or "the call was refused")
    return answer.get("value")


def _read_exactly(fd, n):
    out = b""
    while len(out) < n:
        got = os.read(fd, n - len(out))
        if not got:
            raise OSError(errno.EPIPE, "the server closed it")
        out += got
    return out


def _unpack(value):
    """Content items with base64 data (images, audio, blob resources) get it
    as bytes."""
    if isinstance(value, list):
        import base64

        for item in value:
            if not isinstance(item, dict):
                continue
            if item.get("type") in ("image", "audio") and isinstance(item.get("data"), str):
                try:
                    item["data"] = base64.b64decode(item["data"])
                except ValueError:
                    pass
            res = item.get("resource")
            if isinstance(res, dict) and isinstance(res.get("blob"), str):
                try:
                    res["blob"] = base64.b64decode(res["blob"])
                except ValueError:
                    pass
    return value


def _tool_call(server, tool, arguments=None):
    """Calls TOOL of upstream SERVER (the exact names the servers use) with the
    arguments dict. Returns its structuredContent, else its text, else its
    content items; raises mcp_tools.ToolError when there is no value."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolError("arguments must be a dict, not %s" % type(arguments).__name__)
    if not isinstance(server, str) or not isinstance(tool, str):
        raise ToolError("server and tool must be strings")
    try:
        json.dumps(arguments)
    except (TypeError, ValueError) as e:
        raise ToolError("the arguments cannot be sent as JSON: %s" % e) from None
    return _unpack(_tools_io({"op": "call", "server": server, "tool": tool,
                              "arguments": arguments}))


def _py_name(name):
    out = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not out or out[0].isdigit():
        out = "_" + out
    return out


# JSON Schema's types, as Python has them (a bool is no number here).
_JSON_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
               "array": (list, tuple), "object": (dict,), "null": (type(None),)}


def _schema_types(prop):
    """The JSON types a property's schema names ([] when it names none)."""
    t = prop.get("type") if isinstance(prop, dict) else None
    if isinstance(t, str):
        return [t]
    return [x for x in t if isinstance(x, str)] if isinstance(t, list) else []


def _fits(value, types):
    for t in types:
        if t not in _JSON_TYPES:
            return True  # a type this check does not know: the server's to judge
        if isinstance(value, bool) and t in ("integer", "number"):
            continue
        if t == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, _JSON_TYPES[t]):
            return True
    return not types


def _check_arguments(server, name, schema, arguments):
    """The mistakes an agent makes with a tool's arguments, named before the
    call goes out: a keyword the tool does not take (with the nearest it
    does), a required one missing, a value of another type (what the schema
    wants, and what came). The server checks the rest."""
    import difflib

    props = schema.get("properties")
    if not isinstance(props, dict):
        return
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]

    def takes():
        return ", ".join("%s (%s%s)" % (p, "|".join(_schema_types(props[p])) or "any",
                                        ", required" if p in required else "")
                         for p in props)

    why = None
    if schema.get("additionalProperties") is False:
        for key in arguments:
            if key not in props:
                close = difflib.get_close_matches(key, list(props), n=1)
                why = "it takes no argument %r%s; it takes: %s" % (
                    key, " (did you mean %s?)" % close[0] if close else "", takes())
                break
    if why is None:
        for key in required:
            if key not in arguments and key in props:
                why = "%s (%s) is required; it takes: %s" % (
                    key, "|".join(_schema_types(props[key])) or "any", takes())
                break
    if why is None:
        for key, value in arguments.items():
            types = _schema_types(props.get(key))
            if key in props and not _fits(value, types):
                shown = repr(value)
                why = "%s must be %s, not %s (%s)" % (
                    key, " or ".join(("an " if t[0] in "aeiou" else "a ") + t for t in types),
                    type(value).__name__, shown if len(shown) <= 40 else shown[:37] + "...")
                break
    if why is not None:
        raise ToolError("bad arguments for %s.%s: %s" % (server, name, why))


def _returns_text(tool):
    """What a call of the tool returns, for help(): its outputSchema's fields
    when it has one."""
    out = tool.get("outputSchema")
    props = out.get("properties") if isinstance(out, dict) else None
    if isinstance(props, dict) and props:
        return "Returns a dict: {%s}." % ", ".join(
            "%r: %s" % (k, "|".join(_schema_types(v)) or "any") for k, v in props.items())
    return ("Returns its structured content when it gives one, else its text (a str), else its "
            "content items (a list of dicts).")


def _tool_function(server, tool):
    import inspect
    import keyword

    name, schema = tool["name"], tool.get("inputSchema") or {}
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])

    def call_tool(*args, **kwargs):
        if args:
            if len(args) == 1 and isinstance(args[0], dict) and not kwargs:
                _check_arguments(server, name, schema, args[0])
                return _tool_call(server, name, args[0])
            raise TypeError("%s takes keyword arguments (or one dict of them)" % name)
        _check_arguments(server, name, schema, kwargs)
        return _tool_call(server, name, kwargs)

    params = []
    for prop in sorted(props, key=lambda p: p not in required):
        if not prop.isidentifier() or keyword.iskeyword(prop):
            continue
        default = inspect.Parameter.empty if prop in required else props[prop].get(
            "default", None) if isinstance(props[prop], dict) else None
        params.append(inspect.Parameter(prop, inspect.Parameter.KEYWORD_ONLY, default=default))
    if any(not p.isidentifier() or keyword.iskeyword(p) for p in props):
        params.append(inspect.Parameter("arguments", inspect.Parameter.VAR_KEYWORD))
    call_tool.__signature__ = inspect.Signature(params)
    call_tool.__name__ = call_tool.__qualname__ = _py_name(name)
    call_tool.__module__ = "mcp_tools." + _py_name(server)
    call_tool.__doc__ = "%s\n\n%s\n\nUpstream %r, tool %r. Input schema:\n%s" % (
        tool.get("description") or "(no description)", _returns_text(tool), server, name,
        json.dumps(schema, indent=2, sort_keys=True))
    return call_tool


class _ServerTools(types.ModuleType):
    """An upstream's tools as functions: help() lists exactly them (their
    signatures, descriptions and what they return), dir() names them, and a
    name that is not one of them says which are."""

    def __repr__(self):
        return "<%s: %s>" % (self.__name__, ", ".join(self.__all__))

    def __dir__(self):
        return list(self.__all__)

    def __getattr__(self, name):  # only for a name that is not there
        if name.startswith("_"):
            raise AttributeError(name)
        import difflib

        close = difflib.get_close_matches(name, self.__all__, n=1)
        raise AttributeError("%s has no tool %r%s; its tools: %s (a tool that is not allowed "
                             "is not there)" % (self.__name__, name,
                                                " (did you mean %s?)" % close[0] if close else "",
                                                ", ".join(self.__all__) or "none"))


def _server_namespace(server, tools):
    ns = _ServerTools("mcp_tools." + _py_name(server))
    names = []
    for tool in tools:
        py = _py_name(tool["name"])
        if py in names or py.startswith("_"):
            continue  # a name that collides: reachable through mcp_tools.call()
        setattr(ns, py, _tool_function(server, tool))
        names.append(py)
    ns.__all__ = names
    ns.__doc__ = "The tools of upstream %r (%d): %s. Call one as mcp_tools.%s.TOOL(**arguments)." % (
        server, len(names), ", ".join(names) or "none", _py_name(server))
    return ns


def _build_tools_module(catalog):
    mod = types.ModuleType("mcp_tools", "Other MCP servers' tools, callable from the run: "
                           "mcp_tools.SERVER.TOOL(**arguments) or mcp_tools.call(SERVER, TOOL, "
                           "arguments). Servers: %s." % ", ".join(
                               _py_name(s) for s in catalog) or "none")
    mod.ToolError = ToolError
    mod.call = _tool_call
    mod.servers = {}

    def missing(name):  # PEP 562: only for a name the module does not have
        if name.startswith("_"):
            raise AttributeError(name)
        import difflib

        known = [_py_name(s) for s in catalog]
        close = difflib.get_close_matches(name, known, n=1)
        raise AttributeError("mcp_tools has no upstream %r%s; its upstreams: %s" % (
            name, " (did you mean %s?)" % close[0] if close else "", ", ".join(known) or "none"))

    mod.__getattr__ = missing
    for server, entry in catalog.items():
        ns = _server_namespace(server, entry.get("tools") or [])
        mod.servers[server] = [t["name"] for t in entry.get("tools") or []]
        setattr(mod, _py_name(server), ns)
    return mod


class _ToolsFinder:
    """`import mcp_tools`: built on first import from the catalog the
    supervisor sends over the channel (first on sys.meta_path: a file named
    mcp_tools.py in the working directory does not shadow it)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "mcp_tools":
            return None
        import importlib.machinery

        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        if _tools["catalog"] is None:
            try:
                _tools["catalog"] = _tools_io({"op": "list"}) or {}
            except ToolError as e:
                raise ImportError("mcp_tools is not available: this server has no upstream MCP "
                                  "servers (MCP_EXEC_UPSTREAMS is not set), or %s" % e,
                                  name="mcp_tools") from None
        return _build_tools_module(_tools["catalog"])

    def exec_module(self, module):
        pass


_TOP_LEVEL_AWAIT = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_CO_COROUTINE = 0x0080  # inspect.CO_COROUTINE, without importing inspect
_loop = []  # the event loop top-level await runs on (kept: a session's tasks live on)
_MAGICS = ("!cmd (runs a shell command, with {expression} and $name filled in), "
           "name = !cmd (its output lines), %timeit and %time (time a statement), %%time and "
           "%%timeit on a cell's first line (time the cell), %matplotlib inline (figures are "
           "always shown)")
_MAGIC_LINE = re.compile(r"^([ \t]*)(!|%%?)(.*)$")
# name = !cmd (IPython's capture): a plain name or attribute, then = and !.
_CAPTURE_LINE = re.compile(r"^([ \t]*)([A-Za-z_][A-Za-z0-9_.]*)[ \t]*=[ \t]*!(.*)$")
# A cell magic: the cell's first line (blank and comment lines before it aside).
_CELL_MAGIC = re.compile(r"\A((?:[ \t]*(?:#[^\n]*)?\n)*)[ \t]*%%(time|timeit)\b([^\n]*)(\n|\Z)")
# What !cmd fills in, as IPython does: $$ is a $ for the shell, $name and
# ${name} a variable's value, {expression} the expression's.
_SHELL_FILL = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)|\{([^{}\n]+)\}")


def _await(value):
    """Runs a coroutine to its end on the runtime's event loop."""
    import asyncio

    if not _loop or _loop[0].is_closed():
        _loop[:] = [asyncio.new_event_loop()]
    asyncio.set_event_loop(_loop[0])
    return _loop[0].run_until_complete(value)


def _run_code(code_obj, namespace):
    value = eval(code_obj, namespace)
    if code_obj.co_flags & _CO_COROUTINE:
        value = _await(value)
    return value


def _installed():
    import importlib.metadata

    names = []
    for module, dist in PACKAGES + EXTRAS:
        try:
            names.append("%s %s" % (dist, importlib.metadata.version(dist)))
        except Exception:
            continue
    return ", ".join(names)


def _no_install(what):
    raise SystemExit(
        "%s: nothing can be installed at run time (runs have no network and a read-only "
        "system). Installed: %s. To add a package, build the image with it (wheels/provision, "
        "see wheels/README.md) or start the server with MCP_EXEC_PYTHON set to a venv of the "
        "same Python version that has it." % (what, _installed()))


def _fill(command, namespace):
    """A !cmd line with Python's values in it, as IPython fills them: $name
    or ${name} is the variable's value (a name the code does not have is left
    for the shell), {expression} the expression's (one that fails to
    evaluate, as in awk '{print $1}', is left as written), $$ a plain $."""
    if namespace is None:
        return command

    def fill(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1) or m.group(2)
        if name is not None:
            return str(namespace[name]) if name in namespace else m.group(0)
        try:
            return str(eval(m.group(3), namespace))
        except Exception:
            return m.group(0)

    return _SHELL_FILL.sub(fill, command)


class _SList(list):
    """What name = !cmd gives: the output's lines, as IPython's SList (with
    .n: the lines joined by newlines, .s: by spaces, .l: the list)."""

    @property
    def n(self):
        return "\n".join(self)

    @property
    def s(self):
        return " ".join(self)

    @property
    def l(self):  # noqa: E743 (IPython's name)
        return list(self)


def _shell(command, namespace=None, capture=False):
    """!cmd: the command through /bin/sh, its output in the run's (or, for
    name = !cmd, its lines returned), its exit status in _exit_code (as
    IPython's !)."""
    import subprocess

    command = _fill(command, namespace)
    words = command.split()
    if words[:1] in (["pip"], ["pip3"], ["conda"], ["uv"]) or words[:3] in (
            ["python", "-m", "pip"], ["python3", "-m", "pip"]):
        _no_install("!" + command.strip())
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    if capture:
        done = subprocess.run(command, shell=True, stdout=subprocess.PIPE)
        builtins._exit_code = done.returncode
        return _SList(done.stdout.decode("utf-8", "replace").splitlines())
    status = subprocess.run(command, shell=True).returncode
    builtins._exit_code = status


def _magic(name, rest, namespace):
    """%timeit and %time on a statement; %pip explains; anything else is an
    error naming what is supported."""
    if name in ("pip", "conda", "mamba", "uv"):
        _no_install("%" + name + " " + rest.strip())
    if name == "timeit":
        return _timeit(rest.strip(), namespace)
    if name == "time":
        return _time(rest.strip(), namespace)
    if name == "matplotlib" and rest.strip() in ("", "inline"):
        return None  # figures come back as images anyway
    # Exits with the message alone (no traceback of the runtime's frames).
    raise SystemExit("%%%s is not supported: this is Python, not IPython; what works here: %s"
                     % (name, _MAGICS))


def _format_seconds(s):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("\u00b5s", 1e-6), ("ns", 1e-9)):
        if s >= scale or unit == "ns":
            return "%.3g %s" % (s / scale, unit)


def _timeit_report(timer, number=0, repeat=5):
    """%timeit's and %%timeit's measure: `number` loops a run (0: as many as
    timeit's autorange picks), `repeat` runs; the mean and spread printed."""
    import statistics

    if number <= 0:
        number, _ = timer.autorange()
    runs = [t / number for t in timer.repeat(repeat=max(repeat, 1), number=number)]
    spread = statistics.stdev(runs) if len(runs) > 1 else 0.0
    print("%s \u00b1 %s per loop (mean \u00b1 std. dev. of %d run%s, %d loop%s each)" % (
        _format_seconds(statistics.mean(runs)), _format_seconds(spread), len(runs),
        "" if len(runs) == 1 else "s", number, "" if number == 1 else "s"))


def _timeit(stmt, namespace):
    import timeit

    if not stmt:
        raise SystemExit("%timeit needs a statement, as in: %timeit sum(range(100))")
    _timeit_report(timeit.Timer(stmt, globals=namespace))


def _timed(run):
    """%time's and %%time's: run() with its CPU and wall time printed after
    it, also when it raises."""
    import time

    cpu, wall = time.process_time(), time.perf_counter()
    try:
        return run()
    finally:
        print("CPU time: %s, wall time: %s" % (_format_seconds(time.process_time() - cpu),
                                               _format_seconds(time.perf_counter() - wall)))


def _time(stmt, namespace):
    if not stmt:
        raise SystemExit("%time needs a statement, as in: %time sum(range(100))")

    def run():
        try:
            code_obj = compile(stmt, "<%time>", "eval", _TOP_LEVEL_AWAIT, dont_inherit=True)
        except SyntaxError:
            code_obj = compile(stmt, "<%time>", "exec", _TOP_LEVEL_AWAIT, dont_inherit=True)
        return _run_code(code_obj, namespace)

    return _timed(run)


def _statement_lines(code):
    """The numbers (1-based) of the lines where a statement starts: not inside
    a string that spans lines, nor inside brackets, nor after a backslash.
    Read with tokenize; past a point it cannot read, every line counts."""
    import io
    import tokenize

    starts, seen, depth, at_start, last = set(), set(), 0, True, 0
    skip = (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENCODING, tokenize.ENDMARKER)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            line = tok.start[0]
            last = max(last, tok.end[0])
            if line not in seen:
                seen.add(line)
                if at_start and depth == 0:
                    starts.add(line)
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth = max(depth - 1, 0)
            if tok.type == tokenize.NEWLINE or (tok.type == tokenize.NL and depth == 0):
                at_start = True
            elif tok.type not in skip:
                at_start = False
    except (tokenize.TokenError, SyntaxError):
        # Past what tokenize could read, any line may start a statement.
        starts.update(range(last + 1, code.count("\n") + 2))
    return starts


def _translate_magics(code):
    """The code with each line that starts a statement with ! or % (after
    its indentation) made a call: only tried when the code as written is not
    Python, so no Python code changes meaning, and never inside a string
    (a docstring's "%d" or a literal's "!") or a bracket. None when no line
    does."""
    out, changed = [], False
    starts = _statement_lines(code)
    for number, line in enumerate(code.splitlines(keepends=True), 1):
        captured = _CAPTURE_LINE.match(line.rstrip("\r\n"))
        if captured and captured.group(3).strip() and number in starts:
            indent, target, rest = captured.groups()
            out.append("%s%s = __mcp_exec_shell__(%r, globals(), True)\n" % (indent, target, rest))
            changed = True
            continue
        m = _MAGIC_LINE.match(line.rstrip("\r\n"))
        if m and m.group(3).strip() and number in starts:
            indent, sigil, rest = m.groups()
            if sigil == "!":
                call = "__mcp_exec_shell__(%r, globals())" % rest
            elif sigil == "%%":
                name = rest.split(None, 1)[0]
                call = "__mcp_exec_magic__(%r, '', globals())" % ("%" + name)
            else:
                parts = rest.split(None, 1)
                call = "__mcp_exec_magic__(%r, %r, globals())" % (
                    parts[0], parts[1] if len(parts) > 1 else "")
            out.append(indent + call + "\n")
            changed = True
        else:
            out.append(line)
    return "".join(out) if changed else None


def _parse(code, filename):
    """The code's syntax tree; notebook lines (!cmd, %magic) are read as
    calls when the code is not Python as written."""
    flags = ast.PyCF_ONLY_AST | _TOP_LEVEL_AWAIT
    try:
        return compile(code, filename, "exec", flags, dont_inherit=True)
    except SyntaxError:
        translated = _translate_magics(code)
        if translated is None:
            raise
        try:
            return compile(translated, filename, "exec", flags, dont_inherit=True)
        except SyntaxError:
            pass
        raise


def _cell_magic(code):
    """(name, its arguments, the cell without the magic's line) when the cell
    starts with %%time or %%timeit (as a notebook cell does); the line is
    left blank, so that tracebacks keep the cell's line numbers. None else."""
    m = _CELL_MAGIC.match(code)
    if m is None:
        return None
    return m.group(2), m.group(3).strip(), m.group(1) + "\n" + code[m.end():]


def _cell_timeit(args, body, main, filename):
    """%%timeit: the cell's code run as many times as timeit's autorange
    picks (or -n N), five rounds (or -r R); the mean and spread printed."""
    import timeit

    opts = args.split()
    number = int(opts[opts.index("-n") + 1]) if "-n" in opts[:-1] else 0
    repeat = int(opts[opts.index("-r") + 1]) if "-r" in opts[:-1] else 5
    code_obj = compile(_parse(body, filename), filename, "exec", _TOP_LEVEL_AWAIT,
                       dont_inherit=True)
    _timeit_report(timeit.Timer(lambda: _run_code(code_obj, main.__dict__)), number, repeat)


def _execute(code, main, filename=MAIN_FILENAME):
    """Runs the code; the value of a last expression statement is sent as the
    result (a figure or image shown), as a notebook cell does, and kept in
    _ (a session's next cell can use it). Top-level await works, as in a
    notebook, and so do %%time and %%timeit on the cell's first line."""
    magic = _cell_magic(code)
    if magic is not None:
        name, args, body = magic
        if name == "timeit":
            return _cell_timeit(args, body, main, filename)
        return _timed(lambda: _execute(body, main, filename))
    namespace = main.__dict__
    tree = _parse(code, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
    _run_code(compile(tree, filename, "exec", _TOP_LEVEL_AWAIT, dont_inherit=True), namespace)
    if last is not None:
        expr = ast.Expression(last.value)
        value = _run_code(compile(expr, filename, "eval", _TOP_LEVEL_AWAIT, dont_inherit=True),
                          namespace)
        if value is not None:
            namespace["_"] = value
        _send_last_value(value)


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


def _prepare_process(workdir, results_fd, limits):
    """What a runner sets up once, before its first (or only) code runs."""
    global _results_fd, _limits
    # The server's bounds, by name (base/config.h holds their defaults).
    _results_fd, _limits = results_fd, dict(limits)
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


def run(code, workdir, results_fd, limits, files):
    """Runs in the runner after lockdown. Returns (exit status 0-255, reason):
    reason is "memory" when an uncaught MemoryError ended the run, "file_size"
    when an uncaught OSError EFBIG did (a write past the disk limit), else ""."""
    _prepare_process(workdir, results_fd, limits)
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


# --- Sessions: one interpreter kept alive across calls ---

_session = {"main": None, "out_seen": {}}


def _out_snapshot(workdir):
    """(path relative to workdir) -> (size, mtime_ns) of every regular file
    under out/, and -> "unreadable" for every folder there that cannot be
    listed."""
    unreadable = []
    seen = {rel: (st.st_size, st.st_mtime_ns) for rel, st in _walk_out(workdir, unreadable)}
    seen.update((rel, "unreadable") for rel in unreadable)
    return seen


def session_cell(code, workdir, results_fd, limits, files, cell):
    """One cell of a session (cell numbers start at 1). The __main__
    globals, imports, threads and files of the earlier cells are all still
    there. Returns (status, reason) as run() does; SystemExit ends the cell
    with its status, never the session. Figures still open at the end are
    shown and closed; out/ files new or changed in this cell come back."""
    if _session["main"] is None:
        _prepare_process(workdir, results_fd, limits)
        _session["main"] = _fresh_main("")
    main = _session["main"]
    sys.modules["__main__"] = main
    _counts["images"] = _counts["images_omitted"] = 0
    _displayed.clear()
    _saved_to_out.clear()
    filename = "cell%d.py" % cell
    _register_source(filename, code)
    before = _out_snapshot(workdir)
    status, reason = _run_guarded(workdir, files, code, main, filename)
    _send_step(_send_figures_left_open)
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        _send_step(lambda: plt.close("all"))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    _send_step(lambda: _send_out_files(workdir, _changed_since(before, workdir)))
    if _counts["images_omitted"]:
        _send("images_omitted", {"count": _counts["images_omitted"]})
    return status, reason


def _changed_since(before, workdir):
    after = _out_snapshot(workdir)
    return {path for path, sig in after.items() if before.get(path) != sig}
