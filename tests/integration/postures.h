// The three postures the escape suite and the mount tests run the server in,
// and the host folders they mount (MCP_EXEC_MOUNTS).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mcpexec::testing {

// root: the tests' own (root in CI). container: read-only root, uid 65532,
// no capabilities, no_new_privs. docker: the same under Docker's default
// seccomp profile, so no namespace can be made.
inline std::vector<std::string> Wrapper(const std::string& posture) {
  std::string container = std::string(SOURCE_DIR) + "/scripts/container-posture";
  if (posture == "container") return {container};
  if (posture == "docker") return {container, NO_NAMESPACES_BIN};
  return {};
}

// Why the three postures cannot be set up here (root_reason without
// root; setpriv missing), or nullopt.
inline std::optional<std::string> PosturesMissing(const char* root_reason) {
  if (geteuid() != 0) return std::string(root_reason);
  if (access("/usr/bin/setpriv", X_OK) != 0)
    return std::string("setpriv (util-linux) is not installed");
  return std::nullopt;
}

// Host folders for the tests, outside /tmp (the container postures have a
// /tmp of their own): data/ (read-only in runs) with a CSV and symlinks that
// point out of it, results/ (read-write, writable by any uid), and secret/,
// beside data/ on the host and in no mount.
inline const std::string kMountBase = "/var/tmp/mcp-exec-test-mounts";

// A name for a file or link about to be renamed to path: under kMountBase's
// top (no run sees it) for a path in the fixture, never in the folder it goes
// to, where another test's run listing that folder would see it; beside
// path otherwise.
inline std::string TempNameFor(const std::string& path) {
  static std::atomic<uint32_t> made{0};
  const std::string dir =
      path.rfind(kMountBase + "/", 0) == 0 ? kMountBase : path.substr(0, path.rfind('/'));
  return dir + "/.tmp-" + std::to_string(getpid()) + "-" + std::to_string(made++);
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::string tmp = TempNameFor(path);
  std::ofstream(tmp) << text;
  chmod(tmp.c_str(), 0666);
  rename(tmp.c_str(), path.c_str());
}

// Atomic, as WriteFile: a run of another test process reading the link at
// that moment finds the old one or the new one, never none.
inline void Relink(const std::string& target, const std::string& link) {
  std::string tmp = TempNameFor(link);
  unlink(tmp.c_str());
  if (symlink(target.c_str(), tmp.c_str()) != 0 || rename(tmp.c_str(), link.c_str()) != 0) {
    perror(link.c_str());
  }
}

// Idempotent: every test that mounts calls it first.
inline void PrepareMountFixture() {
  for (const char* d : {"", "/data", "/data/sub", "/results", "/secret"}) {
    std::string dir = kMountBase + d;
    mkdir(dir.c_str(), 0755);
    // Writable by any uid (data/ too): so that only the mount's own mode
    // refuses a run's writes there, never the files' permissions.
    chmod(dir.c_str(), std::string(d) == "/secret" || !*d ? 0755 : 01777);
  }
  std::string csv = "city,year,rain_mm\n";
  for (int i = 0; i < 2000; ++i) {
    csv += "city" + std::to_string(i % 40) + "," + std::to_string(1990 + i % 30) + "," +
           std::to_string(i % 97) + "\n";
  }
  WriteFile(kMountBase + "/data/rain.csv", csv);
  WriteFile(kMountBase + "/data/sub/note.txt", "a note\n");
  WriteFile(kMountBase + "/secret/token.txt", "TOKEN-OUTSIDE-THE-MOUNT\n");
  Relink("/etc/shadow", kMountBase + "/data/link_shadow");
  Relink(kMountBase + "/secret/token.txt", kMountBase + "/data/link_secret");
  Relink("../secret", kMountBase + "/data/link_secret_dir");
  Relink(MCP_EXEC_BIN, kMountBase + "/data/link_server");
}

// The server's environment for a posture with data/ read-only at ro_at and
// results/ read-write at rw_at in runs ("" for the host path itself). In the
// container postures the folders are volumes first, as docker run -v makes
// them.
inline std::map<std::string, std::string> MountEnv(const std::string& posture,
                                                   const std::string& ro_at = "",
                                                   const std::string& rw_at = "") {
  PrepareMountFixture();
  const std::string data = kMountBase + "/data", results = kMountBase + "/results";
  std::map<std::string, std::string> env = {
      {"MCP_EXEC_MOUNTS", data + ":" + (ro_at.empty() ? data : ro_at) + ":ro," + results + ":" +
                              (rw_at.empty() ? results : rw_at) + ":rw"}};
  if (posture != "root") {
    env["CONTAINER_POSTURE_VOLUMES"] = data + ":" + data + ":ro," + results + ":" + results + ":rw";
  }
  return env;
}

}  // namespace mcpexec::testing
