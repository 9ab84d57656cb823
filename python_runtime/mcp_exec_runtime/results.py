"""Results: figures, files, the last expression, on the results channel."""

import io
import json
import os
import re
import stat
import sys

from .frames import record_prefix
from .process import _print_exception

_results_fd = -1
_limits = {}
_counts = {"images": 0, "images_omitted": 0}
_displayed = set()  # ids of figures already sent (display() or show())
_saved_to_out = set()  # ids of figures the code saved under out/ (sent as that file)


def configure(results_fd, limits):
    """The run's results channel and the server's bounds, by name
    (model/config.h holds their defaults); once per runner."""
    global _results_fd, _limits
    _results_fd, _limits = results_fd, dict(limits)


def _send(kind, meta, payload=b""):
    if _results_fd < 0:
        return
    # A record (src/ipc/result_records.h): its prefix, the head, the payload.
    head = json.dumps(dict(meta, kind=kind)).encode()
    try:
        _write_all(record_prefix(len(head), len(payload)) + head + payload)
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
        _write_all(record_prefix(len(head), size) + head)
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
