#!/usr/bin/python3
"""Every client configuration in README.md works as written.

- Every ```json block parses.
- Every server entry that runs the native binary (/usr/local/bin/mcp-exec)
  is started, with its args and env, against the built binary, and answers a
  real exec over stdio.
- Every Docker entry carries the reference's container flags and the image.
- Every HTTP entry is served by the built binary (token change-me) and its
  URL and headers open a session.
- Every `claude mcp add` line is checked the same way.
- The code-mode page's Python example runs (against server-everything) and
  prints what its comments show.
- The pipe example runs as written and prints what its comment shows; the
  Docker section's run command carries the container flags; the HTTP
  deployment line serves (on a loopback port) and requires its token.
- .ci/run runs the README's test command.
Prints 'N passed, N failed'; exit status 1 on any failure.
Usage: readme_configs.py README.md BUILT_BINARY
"""
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

README, BINARY = sys.argv[1], sys.argv[2]
ROOT = os.path.dirname(os.path.abspath(README))
NATIVE = "/usr/local/bin/mcp-exec"
DOCKER_FLAGS = ["--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt",
                "no-new-privileges", "--user", "65532:65532"]
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
        print("PASS", what)
    else:
        failed += 1
        print("FAIL", what)


def exec_over_stdio(command, args, env, code=None):
    """Starts the command as a client would and runs print(6 * 7); with
    code, runs that and returns the result's structuredContent."""
    proc = subprocess.Popen([command] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True,
                            env={"PATH": "/usr/bin:/bin", **env})

    def send(msg):
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()

    def answer(i):
        for line in proc.stdout:
            msg = json.loads(line)
            if msg.get("id") == i:
                return msg
        return {}

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "readme", "version": "1"}}})
        if answer(1).get("result", {}).get("serverInfo", {}).get("name") != "mcp-exec":
            return {} if code else False
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "exec", "arguments": {"code": code or "print(6 * 7)"}}})
        content = answer(2).get("result", {}).get("structuredContent", {})
        return content if code else content.get("stdout") == "42\n"
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_works(url, headers):
    """Serves the built binary where the URL says and opens a session with the headers."""
    token = headers.get("X-MCP-AUTH", "")
    bearer = headers.get("Authorization", "")
    if bearer.startswith("Bearer "):
        token = bearer[len("Bearer "):]
    port = free_port()
    url = re.sub(r"//127\.0\.0\.1:\d+/", f"//127.0.0.1:{port}/", url)
    env = {"PATH": "/usr/bin:/bin", "MCP_EXEC_TRANSPORT": "http", "MCP_EXEC_ADDR": f"127.0.0.1:{port}"}
    if token:
        env["MCP_EXEC_AUTH_TOKEN"] = token
    proc = subprocess.Popen([BINARY], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "readme", "version": "1"}}}).encode()
        req = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            **headers})
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status == 200 and bool(r.headers.get("Mcp-Session-Id"))
    except Exception as e:
        print("   ", e)
        return False
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def docker_ok(args):
    joined = " ".join(args)
    return (args[:3] == ["run", "-i", "--rm"] and args[-1] == "mcp-exec"
            and all(" ".join(DOCKER_FLAGS[i:i + 2]) in joined for i in range(0, len(DOCKER_FLAGS), 2)))


def check_entry(name, entry):
    command = entry.get("command")
    if entry.get("type") == "http":
        check(http_works(entry["url"], entry.get("headers", {})), f"{name}: http {entry['url']}")
    elif command == NATIVE:
        check(exec_over_stdio(BINARY, entry.get("args", []), entry.get("env", {})),
              f"{name}: native binary answers an exec")
    elif command == "docker":
        check(docker_ok(entry.get("args", [])), f"{name}: docker flags and image")
    else:
        check(False, f"{name}: unknown command {command!r}")


text = open(README, encoding="utf-8").read()
# The pages the README links to under docs/ (code mode's upstreams files
# among them): their JSON blocks are checked as the README's.
DOCS = os.path.join(ROOT, "docs")
docs_text = "".join(open(os.path.join(DOCS, f), encoding="utf-8").read()
                    for f in sorted(os.listdir(DOCS)) if f.endswith(".md")) if os.path.isdir(DOCS) else ""
# A code-mode upstreams file (```json upstreams) is not a client's config: it
# must parse and give each server either a command or an http(s):// url.
upstream_blocks = re.findall(r"```json upstreams\n(.*?)```", text + docs_text, re.S)
check(len(upstream_blocks) >= 1, f"{len(upstream_blocks)} upstreams blocks in README and docs/")
for i, block in enumerate(upstream_blocks):
    try:
        servers = json.loads(block)["mcpServers"]
    except (json.JSONDecodeError, KeyError) as e:
        check(False, f"upstreams block {i + 1} parses: {e}")
        continue
    for name, entry in servers.items():
        has_command, has_url = "command" in entry, "url" in entry
        check(has_command != has_url and (has_command or entry["url"].startswith(("http://", "https://"))),
              f"upstreams block {i + 1} {name}: a command or an http(s):// url")
blocks = re.findall(r"```json\n(.*?)```", text, re.S)
check(len(blocks) >= 4, f"README has {len(blocks)} JSON blocks")
blocks += re.findall(r"```json\n(.*?)```", docs_text, re.S)
for i, block in enumerate(blocks):
    try:
        config = json.loads(block)
    except json.JSONDecodeError as e:
        check(False, f"JSON block {i + 1} parses: {e}")
        continue
    check(True, f"JSON block {i + 1} parses")
    for key in ("mcpServers", "servers"):
        for name, entry in config.get(key, {}).items():
            check_entry(f"block {i + 1} {name}", entry)

for line in re.findall(r"^claude mcp add .*$", text, re.M):
    words = shlex.split(line)
    if "--" in words:
        cmd = words[words.index("--") + 1:]
        if cmd[0] == NATIVE:
            check(exec_over_stdio(BINARY, cmd[1:], {}), f"claude mcp add (native): {line[:60]}")
        else:
            check(cmd[0] == "docker" and docker_ok(cmd[1:]), f"claude mcp add (docker): {line[:60]}")
    else:
        url = words[words.index("http") + 2] if "http" in words else ""
        header = words[words.index("--header") + 1] if "--header" in words else ""
        name, _, value = header.partition(": ")
        check(http_works(url, {name: value} if header else {}), f"claude mcp add (http): {url}")

sh_blocks = re.findall(r"```sh\n(.*?)```", text, re.S)

# The pipe example runs as written (from the repository, with build/mcp-exec
# the built binary) and prints what its comment shows ("..." stands for
# what varies).
pipes = [b for b in sh_blocks if "| build/mcp-exec" in b]
check(len(pipes) == 1, f"{len(pipes)} pipe example")
for block in pipes:
    command = "\n".join(l for l in block.splitlines() if not l.startswith("#"))
    shown = [l[2:] for l in block.splitlines() if l.startswith("# ")]
    run = subprocess.run(["bash", "-c", command.replace("build/mcp-exec", shlex.quote(BINARY))],
                         cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin"})
    pattern = ".*".join(re.escape(part) for part in shown[0].split("...")) if shown else "$^"
    check(run.returncode == 0 and re.match(pattern, run.stdout.strip()) is not None,
          f"the pipe example prints what it shows: {run.stdout.strip()[:100]}")

# The Docker section's run command carries the reference's container flags;
# the bookworm build argument is the Dockerfile's.
runs = [l for b in sh_blocks for l in b.replace("\\\n", " ").splitlines()
        if l.startswith("docker run")]
check(len(runs) >= 1, f"{len(runs)} docker run command")
for line in runs:
    args = shlex.split(line, comments=True)[1:]
    joined = " ".join(args)
    check(args[0] == "run" and "-i" in args and "--rm" in args and args[-1] == "mcp-exec" and
          all(" ".join(DOCKER_FLAGS[i:i + 2]) in joined for i in range(0, len(DOCKER_FLAGS), 2)),
          f"docker run (Docker section): {joined[:60]}")
for arg in re.findall(r"--build-arg (\w+)=", text):
    check(re.search(rf"^ARG {arg}\b", open(os.path.join(ROOT, "Dockerfile")).read(), re.M) is not None,
          f"docker build --build-arg {arg} is an ARG of the Dockerfile")

# The HTTP deployment line starts the server as written, on a loopback port
# of the test's (never :8080 on every interface): the token it makes is
# required, health is not.
deploys = [l for b in sh_blocks for l in b.splitlines() if l.startswith("MCP_EXEC_TRANSPORT=http")]
check(len(deploys) == 1, f"{len(deploys)} HTTP deployment line")
for line in deploys:
    port = free_port()
    line = re.sub(r"MCP_EXEC_ADDR=\S+", f"MCP_EXEC_ADDR=127.0.0.1:{port}", line)
    line = re.sub(r"\bmcp-exec$", shlex.quote(BINARY), line)
    proc = subprocess.Popen(["bash", "-c", "exec env " + line], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={"PATH": "/usr/bin:/bin"})
    health = refused = 0
    try:
        for _ in range(600):
            try:
                health = urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).status
                break
            except Exception:
                time.sleep(0.1)
        req = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=10)
        except urllib.error.HTTPError as e:
            refused = e.code
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    check(health == 200 and refused == 401,
          f"the HTTP deployment line serves, token required: /healthz {health}, /mcp {refused}")

# The code-mode page's Python example runs as written against that page's
# first upstreams file (its npx download replaced by the server-everything
# tests/upstreams pins): a comment after a print(...) on its line is what it
# prints ("..." stands for what varies), in order.
EVERYTHING = os.path.join(ROOT, "tests", "upstreams", "node_modules", "@modelcontextprotocol",
                          "server-everything", "dist", "index.js")
code_mode = open(os.path.join(DOCS, "code-mode.md"), encoding="utf-8").read()
examples = re.findall(r"```python\n(.*?)```", code_mode, re.S)
check(len(examples) == 1 and os.path.exists(EVERYTHING),
      f"{len(examples)} Python example in docs/code-mode.md, server-everything at {EVERYTHING}")
if examples and os.path.exists(EVERYTHING):
    servers = json.loads(re.findall(r"```json upstreams\n(.*?)```", code_mode, re.S)[0])
    for entry in servers["mcpServers"].values():
        if entry.get("command") == "npx":
            entry["command"], entry["args"] = "node", [EVERYTHING, "stdio"]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(servers, f)
    try:
        out = exec_over_stdio(BINARY, [], {"MCP_EXEC_UPSTREAMS": f.name}, examples[0])
    finally:
        os.unlink(f.name)
    shown = re.findall(r"^[ \t]*print\(.*\)[ \t]+# (.*)$", examples[0], re.M)
    lines = (out.get("stdout") or "").splitlines()
    at, missing = 0, []
    for want in shown:
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("...")))
        while at < len(lines) and not pattern.fullmatch(lines[at].strip()):
            at += 1
        if at == len(lines):
            missing.append(want)
            break
        at += 1
    check(out.get("exit_code") == 0 and len(shown) >= 3 and not missing,
          f"the code-mode example prints what it shows ({len(shown)} lines; "
          f"not found: {missing}; stderr: {(out.get('stderr') or '')[-300:]})")

commands = re.findall(r"^(scripts/\S+\.sh)\s", text, re.M)
check(commands[:2] == ["scripts/setup.sh", "scripts/test.sh"], f"the two commands: {commands[:2]}")
check("scripts/test.sh" in open(os.path.join(ROOT, ".ci", "run")).read(), ".ci/run runs scripts/test.sh")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
