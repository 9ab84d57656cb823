"""Warm-up in the zygote, before any fork: the promised packages imported,
the caches they fill lazily filled, a rehearsal run, the heap frozen for
copy-on-write, and the report of what is there."""

import ast
import builtins
import faulthandler
import gc
import io
import json
import linecache
import os
import sys

from .frames import record_prefix
from .process import _find_generators, _generators

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
    record_prefix(len(head), 0)
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
