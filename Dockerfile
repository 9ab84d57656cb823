# syntax=docker/dockerfile:1
#
# The production image of mcp-exec: Debian (trixie by default, bookworm with
# --build-arg DEBIAN_IMAGE=debian:bookworm-slim), the binary, and the Debian
# packages it needs at run time. Nothing else.
#
#   docker build -t mcp-exec .
#   docker run --rm -i --network none --read-only --cap-drop ALL \
#     --security-opt no-new-privileges --user 65532:65532 \
#     --tmpfs /tmp:rw,noexec,nosuid,size=64m \
#     --memory 256m --pids-limit 128 --cpus 1 mcp-exec
#
# Docker mounts a container's cgroup read-only, so per-run cgroups are off in
# this posture (`mcp-exec doctor` says so): --memory and --pids-limit then
# bound all runs together, and rlimits each process of a run. The server
# reads --cpus and --memory from its cgroup: with the line above it runs one
# call at a time and gives a run 96 MiB of memory and 64 MiB of files. A
# host that delegates a writable cgroup v2 subtree to the container (memory
# and pids in its cgroup.subtree_control) gets a cgroup per run with no flag
# to set.
#
# The package lists are NOT repeated here: both stages read them from
# scripts/deps/*.txt (one package a line, '#' comments), the same files
# scripts/setup.sh installs from. scripts/check-image builds this file with
# podman and runs the image in the posture above (CTest image).

ARG DEBIAN_IMAGE=debian:trixie-slim

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
# The Debian packages that hold the shared libraries the binary links
# (libpython3.X, libseccomp2, libc6, ...): the runtime stage installs exactly
# these, so no list names a Python minor version.
RUN ldd build/mcp-exec | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' \
    | while read -r lib; do dpkg -S "*/${lib##*/}"; done \
    | cut -d: -f1 | sort -u >build/linked-packages.txt \
 && cat build/linked-packages.txt \
 && grep -q '^libpython3' build/linked-packages.txt

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

# The shared libraries the binary links (found by the build stage; its HTTP
# server, Boost.Beast, is header-only) and the sandbox's Python packages
# (their versions are those of the Debian release; wheels/manifest.txt
# records bookworm's and trixie's).
COPY scripts/deps/runtime.txt /tmp/deps/runtime.txt
COPY --from=build /src/build/linked-packages.txt /tmp/deps/linked.txt
RUN apt-get update \
 && cat /tmp/deps/linked.txt /tmp/deps/runtime.txt | grep -v -e '^#' -e '^[[:space:]]*$' \
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
# at start, before it answers (0.1-0.15 s of a ~1 s start), and every run
# reuses it.

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
