# syntax=docker/dockerfile:1
#
# The production image of mcp-exec: Debian bookworm, the binary, and the
# Debian packages it needs at run time. Nothing else.
#
#   docker build -t mcp-exec .
#   docker run --rm -i --network none --read-only --cap-drop ALL \
#     --security-opt no-new-privileges --user 65532:65532 \
#     --tmpfs /tmp:rw,noexec,nosuid,size=64m \
#     --memory 256m --pids-limit 128 --cpus 1 mcp-exec
#
# Docker mounts a container's cgroup read-only, so per-run cgroups are off in
# this posture (`mcp-exec doctor` says so): --memory and --pids-limit then
# bound all runs together, and rlimits each process of a run. A host that
# delegates a writable cgroup v2 subtree to the container (memory and pids in
# its cgroup.subtree_control) gets a cgroup per run with no flag to set.
#
# The package lists are NOT repeated here: both stages read them from
# scripts/deps/*.txt (one package a line, '#' comments), the same files
# scripts/setup.sh installs from. scripts/check-image-recipe replays the
# runtime stage in a debootstrapped bookworm (no Docker engine needed) and
# fails if this file stops reading those lists.

ARG DEBIAN_IMAGE=debian:bookworm-slim

# ---------------------------------------------------------------- build stage
FROM ${DEBIAN_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
COPY scripts/deps/build.txt /tmp/deps/build.txt
RUN apt-get update \
 && grep -v -e '^#' -e '^[[:space:]]*$' /tmp/deps/build.txt \
    | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the build reads: the tests are not built (BUILD_TESTING=OFF).
COPY CMakeLists.txt ./
COPY src/ src/
COPY embed/ embed/
COPY python_runtime/ python_runtime/
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
 && cmake --build build -j "$(nproc)" \
 && strip --strip-unneeded build/mcp-exec \
 && build/mcp-exec --version

# -------------------------------------------------------------- runtime stage
FROM ${DEBIAN_IMAGE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
ARG VERSION=0.1.0
# The repository URL and the licence are the publisher's to state:
#   docker build --build-arg SOURCE=https://... --build-arg LICENSES=MIT .
ARG SOURCE=
ARG LICENSES=MIT
LABEL org.opencontainers.image.title="mcp-exec" \
      org.opencontainers.image.description="MCP server whose one tool, exec, runs Python (numpy, pandas, PyYAML, Jinja2, Pillow, matplotlib) in a locked-down sandbox; drop-in for the Go mcp-exec" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="${LICENSES}" \
      org.opencontainers.image.version="${VERSION}"

# The shared libraries the binary links (libpython3.11, libseccomp2; its
# HTTP server, Boost.Beast, is header-only) and the sandbox's Python
# packages (their versions are pinned by bookworm itself; wheels/manifest.txt
# records them).
COPY scripts/deps/runtime.txt /tmp/deps/runtime.txt
RUN apt-get update \
 && grep -v -e '^#' -e '^[[:space:]]*$' /tmp/deps/runtime.txt \
    | xargs apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/deps

# The unprivileged user of the reference posture (--user 65532:65532). Runs
# drop to the same ids, so nothing in the image belongs to them.
RUN groupadd --system --gid 65532 mcp \
 && useradd --system --uid 65532 --gid 65532 --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin mcp

COPY --from=build /src/build/mcp-exec /usr/local/bin/mcp-exec

# matplotlib's font cache is NOT pre-built here, on purpose: the server points
# MPLCONFIGDIR at $MCP_EXEC_WORKDIR_ROOT/mcp-exec-cache-<uid>/matplotlib
# (default /tmp/mcp-exec-cache-65532/matplotlib), and under --read-only with
# --tmpfs /tmp that directory starts empty at every container start, so a
# cache baked into the image would never be read. The zygote builds it once
# at start, before it answers (scripts/check-image-recipe measures the cost:
# 0.1-0.15 s of the ~0.9 s start here), and every run reuses it.

# Only /tmp (a tmpfs in the reference posture) is written: run directories
# and the cache above. The server is PID 1 here: it reaps what it is given
# and exits 0 on SIGTERM, SIGINT or EOF on stdin.
USER 65532:65532

# No HEALTHCHECK: the default transport is stdio, so the server's only channel
# is the stdin/stdout of the client that started the container (`docker run
# -i`); a probe process exec'd beside it could not reach it, and a dead server
# already shows as a closed pipe to that client. With MCP_EXEC_TRANSPORT=http
# the orchestrator probes GET /healthz and /readyz itself (see
# deploy/kubernetes/); the image ships no curl for a Docker HEALTHCHECK.
# 8080 is used only with MCP_EXEC_TRANSPORT=http or sse (MCP_EXEC_ADDR).
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/mcp-exec"]
