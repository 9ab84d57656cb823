"""Code mode: ``import mcp_tools`` calls other MCP servers' tools."""

import json
import os
import re
import sys
import threading
import types

from . import results as _results
from .frames import field as _field, read_field as _read_field

#
# The run's only way out is the tool channel the supervisor made for it (a
# socket pair: no network); its frames are src/ipc/tool_frames.h's, made by
# frames.py. The supervisor decides everything that
# matters (which tools, their arguments, the count, the result's size); this
# side only asks and unpacks.


class ToolError(Exception):
    """A nested tool call that gave no value: the tool reported an error, it is
    not allowed, its arguments do not fit its schema, or a limit was passed.
    The message says which, in plain words."""


ToolError.__module__ = "mcp_tools"  # as tracebacks and the agent should name it
# "lock": one frame written at a time (and the ids); "cv" guards the rest:
# the replies read for other threads' calls, whether a thread is reading,
# why the channel ended. Calls overlap: each thread writes its frame, then
# one thread at a time reads, keeping what belongs to others.
_tools = {"lock": threading.Lock(), "next": 1, "catalog": None, "fd": -1,
          "cv": threading.Condition(), "replies": {}, "reading": False, "ended": {},
          "closing": {}, "pool": None}
# "ended" and "closing" are kept per socket (its inode): a session's cells
# each get a new socket on the same fd, and one cell's ended channel says
# nothing of the next one's.


def configure(tools_fd):
    """The run's end of its tool channel (-1: none); once per runner."""
    _tools["fd"] = tools_fd


def _socket_of(fd):
    try:
        return os.fstat(fd).st_ino
    except OSError:
        return None


def _send_frame(fd, frame):
    ended = _tools["ended"].get(_socket_of(fd))
    if ended is not None:  # nothing goes out on a channel known to be closed
        raise ToolError(ended)
    with _tools["lock"]:
        frame_id = _tools["next"]
        _tools["next"] += 1
        body = json.dumps(dict(frame, id=frame_id)).encode()
        limit = _results._limits.get("max_tool_frame_bytes", 0)
        if limit and len(body) > limit:
            raise ToolError("this call's arguments take %d bytes, more than the %d one call may "
                            "send (MCP_EXEC_MAX_TOOL_RESULT_BYTES sets it); pass less per call"
                            % (len(body), limit))
        # On a descriptor of its own: a session's next cell puts a new socket
        # on fd, and a frame is never split between two sockets.
        try:
            own = os.dup(fd)
        except OSError as e:
            raise ToolError(_closed_text(_socket_of(fd), e)) from None
        try:
            data = _field(body)
            while data:
                data = data[os.write(own, data):]
        except OSError as e:
            raise ToolError(_closed_text(_socket_of(own), e)) from None
        finally:
            os.close(own)
    return frame_id


def _closed_text(sock, e):
    return _tools["closing"].get(sock) or (
        "the tool channel is closed (%s): tools can be called only while an exec call runs"
        % (e.strerror or e))


def _await_reply(fd, frame_id):
    """The reply to frame_id: kept for this thread by another's read, or
    read here (keeping what comes for others) while no other thread reads."""
    cv = _tools["cv"]
    with cv:
        while True:
            if frame_id in _tools["replies"]:
                return _tools["replies"].pop(frame_id)
            sock = _socket_of(fd)
            if sock in _tools["ended"]:
                raise ToolError(_tools["ended"][sock])
            if not _tools["reading"]:
                _tools["reading"] = True
                break
            cv.wait()
    # The reader reads whole frames from the socket it started on (a dup of
    # fd): a thread left from a session's earlier cell never reads half a
    # frame from the next cell's socket.
    own = None
    try:
        own = os.dup(fd)
        sock = _socket_of(own)
        while True:
            try:
                answer = json.loads(_read_field(own))
            except ValueError:
                answer = None
            with cv:
                if not isinstance(answer, dict):
                    _tools["ended"][sock] = "the tool channel sent something that is not JSON"
                    raise ToolError(_tools["ended"][sock])
                reply_id = answer.get("id")
                if reply_id == frame_id:
                    return answer
                if reply_id is None:  # the channel's last word: why it ends
                    _tools["closing"][sock] = answer.get("error")
                else:
                    _tools["replies"][reply_id] = answer
                cv.notify_all()
    except OSError as e:
        with cv:
            _tools["ended"][sock] = _closed_text(sock, e)
        raise ToolError(_tools["ended"][sock]) from None
    finally:
        if own is not None:
            os.close(own)
        with cv:
            _tools["reading"] = False
            cv.notify_all()


def _tools_io(frame):
    fd = _tools["fd"]
    answer = _await_reply(fd, _send_frame(fd, frame))
    if not answer.get("ok"):
        raise ToolError(answer.get("error") or "the call was refused")
    return answer.get("value")


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


class _Pending:
    """A call made while an event loop runs in the thread (async def, or a
    cell with top-level await): already on its way, its value awaited."""

    __slots__ = ("_future", "_what")

    def __init__(self, future, what):
        self._future, self._what = future, what

    def __await__(self):
        import asyncio

        return asyncio.wrap_future(self._future).__await__()

    def _said(self):
        return ("mcp_tools call %s, not awaited: inside async code a call returns an "
                "awaitable; write `await %s(...)`" % (self._what, self._what))

    def __repr__(self):
        return "<%s>" % self._said()

    def __getattr__(self, name):
        raise AttributeError(self._said())

    def _as_value(self, *args):
        raise TypeError(self._said())

    # Used as the value it is not yet: the same words, whatever the use.
    # (Not ==, hash or order: asyncio may keep awaitables in sets and dicts.)
    __getitem__ = __iter__ = __len__ = __contains__ = __int__ = __float__ = __index__ = _as_value
    __add__ = __radd__ = __mul__ = _as_value
    __bool__ = _as_value  # `if call(...):` without await is a mistake, said as one


def _dispatch(server, tool, arguments, what):
    """The value of the call; inside async code an awaitable of it, so that
    calls overlap (asyncio.gather), up to MCP_EXEC_MAX_TOOL_CALLS_IN_FLIGHT
    at a time."""
    loop = None
    aio = sys.modules.get("asyncio")
    if aio is not None:
        try:
            loop = aio.get_running_loop()
        except RuntimeError:
            loop = None
    if loop is None:
        return _tool_call(server, tool, arguments)
    with _tools["lock"]:
        if _tools["pool"] is None:
            from concurrent.futures import ThreadPoolExecutor

            workers = _results._limits.get("max_tool_calls_in_flight", 0) or 8
            _tools["pool"] = ThreadPoolExecutor(workers, thread_name_prefix="mcp_tools")
    return _Pending(_tools["pool"].submit(_tool_call, server, tool, arguments), what)


def _call(server, tool, arguments=None):
    """Calls TOOL of upstream SERVER (the exact names the servers use) with the
    arguments dict. Returns its structuredContent, else its text, else its
    content items; raises mcp_tools.ToolError when there is no value. Inside
    async code (a running event loop) it returns an awaitable of that."""
    return _dispatch(server, tool, arguments, "mcp_tools.call")


def _first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _search(query, limit=10):
    """The tools whose name, server or description match the words of query,
    best first (a word in the name counts most), at most limit of them: a
    list of {"server", "name", "description" (its first line), "call" (how to
    call it)}. help() on a result's call shows its signature."""
    if not isinstance(query, str):
        raise TypeError("search takes words as a str, not %s" % type(query).__name__)
    words = [w for w in re.split(r"[^0-9a-z]+", query.lower()) if w]
    if not words:
        raise ValueError("search needs at least one word, e.g. mcp_tools.search('issues')")
    found = []
    for server, entry in (_tools["catalog"] or {}).items():
        for tool in entry.get("tools") or []:
            name, description = tool["name"], tool.get("description") or ""
            name_words = set(re.split(r"[^0-9a-z]+", name.lower()))
            text = description.lower()
            score = 0
            for w in words:
                score += 8 if w in name_words else 4 if w in name.lower() else 0
                score += 2 if w in server.lower() else 0
                score += min(text.count(w), 3)
            if score:
                found.append((-score, server, name, description))
    found.sort(key=lambda f: (f[0], f[1], f[2]))
    return [{"server": server, "name": name, "description": _first_line(description),
             "call": "mcp_tools.%s.%s" % (_py_name(server), _py_name(name))}
            for _, server, name, description in found[:max(0, int(limit))]]


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
        what = "mcp_tools.%s.%s" % (_py_name(server), _py_name(name))
        if args:
            if len(args) == 1 and isinstance(args[0], dict) and not kwargs:
                _check_arguments(server, name, schema, args[0])
                return _dispatch(server, name, args[0], what)
            raise TypeError("%s takes keyword arguments (or one dict of them)" % name)
        _check_arguments(server, name, schema, kwargs)
        return _dispatch(server, name, kwargs, what)

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
                           "arguments); mcp_tools.search('words') finds them. Servers: %s." %
                           ", ".join(_py_name(s) for s in catalog) or "none")
    mod.ToolError = ToolError
    mod.call = _call
    mod.search = _search
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
