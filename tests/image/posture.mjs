// How the image tests and bench/image.mjs run the image: the README's
// posture, word for word, after the harness's own podman flags.
//   MCP_EXEC_PODMAN_ARGS: the harness's flags, space-separated (--runtime
//   runc, --ulimit under the machine's hard limits, --cgroup-parent below
//   the test's own cgroup; scripts/check-image sets them). Never part of a
//   user instruction.

/** The README's `docker run` flags (README.md, "Docker"). */
export const POSTURE = [
  '--network', 'none', '--read-only', '--cap-drop', 'ALL',
  '--security-opt', 'no-new-privileges', '--user', '65532:65532',
  '--tmpfs', '/tmp:rw,noexec,nosuid,size=64m',
  '--memory', '256m', '--pids-limit', '128', '--cpus', '1',
];

/** The harness's own flags. */
export const HARNESS = (process.env.MCP_EXEC_PODMAN_ARGS || '--runtime runc').split(' ').filter(Boolean);

/** Both, in the order `podman run` takes them before the image. */
export const POSTURE_ARGS = [...HARNESS, ...POSTURE];
