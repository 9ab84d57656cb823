"""Sessions: one interpreter kept alive across calls."""

import sys

from .process import _fresh_main, _register_source
from .results import (_counts, _displayed, _saved_to_out, _send, _send_figures_left_open,
    _send_out_files, _send_step, _walk_out)
from .runner import _prepare_process, _run_guarded

_session = {"main": None, "out_seen": {}}


def _out_snapshot(workdir):
    """(path relative to workdir) -> (size, mtime_ns) of every regular file
    under out/, and -> "unreadable" for every folder there that cannot be
    listed."""
    unreadable = []
    seen = {rel: (st.st_size, st.st_mtime_ns) for rel, st in _walk_out(workdir, unreadable)}
    seen.update((rel, "unreadable") for rel in unreadable)
    return seen


def session_cell(code, workdir, results_fd, tools_fd, limits, files, cell):
    """One cell of a session (cell numbers start at 1). The __main__
    globals, imports, threads and files of the earlier cells are all still
    there. Returns (status, reason) as run() does; SystemExit ends the cell
    with its status, never the session. Figures still open at the end are
    shown and closed; out/ files new or changed in this cell come back."""
    if _session["main"] is None:
        _prepare_process(workdir, results_fd, tools_fd, limits)
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
