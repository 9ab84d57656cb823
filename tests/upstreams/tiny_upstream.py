#!/usr/bin/python3
"""A small MCP server over stdio for the code-mode tests: tools whose input
schemas use the keywords the supervisor checks ("format": "date-time", a
"pattern", "patternProperties"), and one whose answer nests as deep as it is
asked. Standard library only; newline-delimited JSON-RPC; no network.

Tools:
  when(at)          at: a date-time string; answers "at <at>"
  match(word)       word: a string matching ^[a-z]+$; answers its length
  labels(labels)    labels: an object whose keys match ^x- (patternProperties,
                    additionalProperties false); answers the keys
  deep(levels)      answers structuredContent nested `levels` arrays deep
  grow()            adds a tool grown_N (answering "grown_N") and says so with
                    notifications/tools/list_changed before its answer
"""
import json
import sys

TOOLS = [
    {"name": "when", "description": "Echoes a date-time.",
     "inputSchema": {"type": "object", "required": ["at"],
                     "properties": {"at": {"type": "string", "format": "date-time"}}}},
    {"name": "match", "description": "The length of a lowercase word.",
     "inputSchema": {"type": "object", "required": ["word"],
                     "properties": {"word": {"type": "string", "pattern": "^[a-z]+$"}}}},
    {"name": "labels", "description": "The keys of labels, each starting x-.",
     "inputSchema": {"type": "object", "required": ["labels"],
                     "properties": {"labels": {"type": "object",
                                               "patternProperties": {"^x-": {"type": "string"}},
                                               "additionalProperties": False}}}},
    {"name": "grow", "description": "Adds a tool, and says the list changed.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "deep", "description": "An answer nested `levels` arrays deep.",
     "inputSchema": {"type": "object", "required": ["levels"],
                     "properties": {"levels": {"type": "integer", "minimum": 0}}}},
]


def answer(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "tiny", "version": "1"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "when":
            return {"content": [{"type": "text", "text": "at " + str(args.get("at"))}]}
        if name == "match":
            return {"content": [{"type": "text", "text": str(len(args.get("word", "")))}]}
        if name == "labels":
            return {"content": [{"type": "text", "text": ",".join(sorted(args.get("labels", {})))}]}
        if name == "grow":
            grown = "grown_%d" % sum(1 for t in TOOLS if t["name"].startswith("grown_"))
            TOOLS.append({"name": grown, "description": "A tool grow() added.",
                          "inputSchema": {"type": "object", "properties": {}}})
            sys.stdout.write(json.dumps({"jsonrpc": "2.0",
                                         "method": "notifications/tools/list_changed"}) + "\n")
            return {"content": [{"type": "text", "text": grown}]}
        if name.startswith("grown_"):
            return {"content": [{"type": "text", "text": name}]}
        if name == "deep":
            # Written as text: json.dumps recurses and would stop at Python's
            # recursion limit long before the supervisor's bound matters.
            n = int(args.get("levels", 0))
            return "RAW:" + '{"structuredContent":' + "[" * n + "]" * n + "}"
        return None
    return None


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue
        result = answer(msg)
        if isinstance(result, str) and result.startswith("RAW:"):
            out = '{"jsonrpc":"2.0","id":%s,"result":%s}' % (json.dumps(msg["id"]), result[4:])
        elif result is None:
            out = json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                              "error": {"code": -32601, "message": "unknown"}})
        else:
            out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
