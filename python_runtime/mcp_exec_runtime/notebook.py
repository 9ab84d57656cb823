"""Notebook habits: top-level await, ``_``, ``!cmd``, ``%timeit``, ``%time``,
``%pip``, and the ``IPython.display`` shim."""

import ast
import builtins
import io
import os
import re
import sys
import types

from .process import MAIN_FILENAME
from .warm import EXTRAS, PACKAGES
from .results import _send_last_value, display

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
