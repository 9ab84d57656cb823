#!/usr/bin/python3
"""A small streamable HTTP MCP server over TLS for the code-mode tests.
Standard library only; listens on 127.0.0.1 only, on a free port it prints
as its first line of stdout.

  tls_upstream.py CERT KEY [--plain]

CERT and KEY are PEM files (the tests make them with a throwaway CA).
--plain serves http instead (for benches that do not need TLS).
Environment:
  TLS_UPSTREAM_AUTH  when set, every POST must carry exactly this
                     Authorization value, or it is answered 401
  TLS_UPSTREAM_TOOLS how many extra tools named tool_0001... to list
                     (default 0), for the discovery tests
  TLS_UPSTREAM_IDLE_S  seconds a kept-alive connection may sit idle before
                     the server closes it (default 60)

Tools:
  echo(message)   answers "Echo: <message>"
  wait(ms)        sleeps ms milliseconds on its own thread, answers "waited"
  peak()          the most wait calls that were in progress at once since
                  the last peak(), which starts the count again
  sni()           the server name the TLS hello of the connection carrying
                  the call sent ("" for none)
  connections()   how many connections the server has accepted so far
  stats(values)   answers structuredContent {"n", "mean"} (with outputSchema)
  whoami()        echoes the Authorization header it got (a careless server
                  that leaks a credential into its answer)
  grow()          adds a tool grown_N (answering "grown_N"); its answer is an
                  event stream whose first event is
                  notifications/tools/list_changed
"""
import json
import os
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WAITS = {"now": 0, "peak": 0}
CONNECTIONS = {"accepted": 0}
SESSIONS = set()
LOCK = threading.Lock()

TOOLS = [
    {"name": "echo", "description": "Echoes a message back.",
     "inputSchema": {"type": "object", "required": ["message"],
                     "properties": {"message": {"type": "string"}}}},
    {"name": "wait", "description": "Waits some milliseconds, then answers.",
     "inputSchema": {"type": "object", "required": ["ms"],
                     "properties": {"ms": {"type": "integer", "minimum": 0,
                                           "maximum": 10000}}}},
    {"name": "whoami", "description": "Echoes the Authorization header.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "peak", "description": "The most wait calls at once since the last peak().",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "grow", "description": "Adds a tool, and says the list changed.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "connections", "description": "How many connections were accepted.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "sni", "description": "The server name of the client's TLS hello.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "stats", "description": "Count and mean of numbers.\nSecond line.",
     "inputSchema": {"type": "object", "required": ["values"],
                     "properties": {"values": {"type": "array",
                                               "items": {"type": "number"}}}},
     "outputSchema": {"type": "object", "required": ["n", "mean"],
                      "properties": {"n": {"type": "integer"},
                                     "mean": {"type": "number"}}}},
]
for i in range(int(os.environ.get("TLS_UPSTREAM_TOOLS", "0"))):
    TOOLS.append({"name": "tool_%04d" % i,
                  "description": "Extra tool number %d: %s." % (
                      i, "invoices" if i % 7 == 0 else "weather"),
                  "inputSchema": {"type": "object", "properties": {}}})


def text(t):
    return {"content": [{"type": "text", "text": t}]}


def call(name, args, handler):
    if name == "whoami":
        return text("you sent " + str(handler.headers.get("Authorization")))
    if name == "echo":
        return text("Echo: " + str(args.get("message")))
    if name == "wait":
        with LOCK:
            WAITS["now"] += 1
            WAITS["peak"] = max(WAITS["peak"], WAITS["now"])
        time.sleep(int(args.get("ms", 0)) / 1000.0)
        with LOCK:
            WAITS["now"] -= 1
        return text("waited")
    if name == "peak":
        with LOCK:
            peak, WAITS["peak"] = WAITS["peak"], WAITS["now"]
        return text(str(peak))
    if name == "connections":
        with LOCK:
            return text(str(CONNECTIONS["accepted"]))
    if name == "sni":
        return text(getattr(handler.connection, "sni_name", None) or "")
    if name == "stats":
        values = args.get("values") or []
        mean = sum(values) / len(values) if values else 0.0
        doc = {"n": len(values), "mean": mean}
        return {"content": [{"type": "text", "text": json.dumps(doc)}],
                "structuredContent": doc}
    if name == "grow":
        with LOCK:
            grown = "grown_%d" % sum(1 for t in TOOLS if t["name"].startswith("grown_"))
            TOOLS.append({"name": grown, "description": "A tool grow() added.",
                          "inputSchema": {"type": "object", "properties": {}}})
        return text(grown)
    if name.startswith("tool_") or name.startswith("grown_"):
        return text(name)
    return None


def answer(msg, handler):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "tls-upstream", "version": "1"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return call(params.get("name"), params.get("arguments") or {}, handler)
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the answer's head and body are two writes
    timeout = float(os.environ.get("TLS_UPSTREAM_IDLE_S", "60"))

    def setup(self):
        with LOCK:
            CONNECTIONS["accepted"] += 1
        super().setup()

    def log_message(self, *args):
        pass

    def send(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.send(405)

    def do_DELETE(self):
        self.send(200)

    def do_POST(self):
        want = os.environ.get("TLS_UPSTREAM_AUTH")
        length = int(self.headers.get("Content-Length") or 0)
        if length > (1 << 20):
            self.send(413)
            return
        body = self.rfile.read(length)
        if want is not None and self.headers.get("Authorization") != want:
            self.send(401, b"unauthorized")
            return
        try:
            msg = json.loads(body)
        except ValueError:
            self.send(400)
            return
        if "id" not in msg:
            self.send(202)
            return
        headers = [("Content-Type", "application/json")]
        if msg.get("method") == "initialize":
            sid = uuid.uuid4().hex
            with LOCK:
                SESSIONS.add(sid)
            headers.append(("Mcp-Session-Id", sid))
        result = answer(msg, self)
        if result is None:
            reply = {"jsonrpc": "2.0", "id": msg["id"],
                     "error": {"code": -32601, "message": "unknown"}}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        if (msg.get("params") or {}).get("name") == "grow":
            # As an event stream: the notification first, then the answer.
            changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            body = "".join("event: message\ndata: %s\n\n" % json.dumps(m)
                           for m in (changed, reply)).encode()
            self.send(200, body, [("Content-Type", "text/event-stream")])
            return
        self.send(200, json.dumps(reply).encode(), headers)


def main():
    cert, key = sys.argv[1], sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if "--plain" not in sys.argv:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)

        def remember(sock, name, ctx):
            sock.sni_name = name
        context.sni_callback = remember
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
