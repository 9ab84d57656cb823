// What runs leave for the client to fetch instead of receiving inline: an
// out/ file too big to embed, a stream that lost bytes to the output
// budget. Each is a file in one private folder under the workdir root,
// written as the run's pipes bring it (never held in memory), named by an
// unguessable URI (128 random bits) that resources/read serves until it
// expires (MCP_EXEC_RESOURCE_TTL_S). The folder is bounded
// (MCP_EXEC_RESOURCE_STORE_MB): the oldest resources go first to make room.
// It is removed with the store, at shutdown.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/unique_fd.h"

namespace mcpexec {

class ResourceStore {
 public:
  using Clock = std::chrono::steady_clock;

  // Creates its folder (mcp-exec-resources-XXXXXX, 0700) under root. It
  // never writes past max_bytes, nor where its filesystem would have fewer
  // than keep_free bytes left (the runs' own files may live there).
  static std::unique_ptr<ResourceStore> Create(const std::string& root, int64_t max_bytes,
                                               std::chrono::seconds ttl, std::string* error) {
    return Create(root, max_bytes, ttl, 0, error);
  }
  static std::unique_ptr<ResourceStore> Create(const std::string& root, int64_t max_bytes,
                                               std::chrono::seconds ttl, int64_t keep_free,
                                               std::string* error);
  ~ResourceStore();
  ResourceStore(const ResourceStore&) = delete;
  ResourceStore& operator=(const ResourceStore&) = delete;

  // A resource being written: its bytes count against the store's bound as
  // they come; past `limit` bytes, or past the bound when nothing older can
  // make room, or on a disk error, it fails and stays failed (its bytes
  // are freed at once).
  class Writer {
   public:
    ~Writer();
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    bool Write(const char* data, size_t n);
    bool failed() const { return failed_; }
    int64_t size() const { return size_; }
    // Why it failed, in plain words ("" while it has not).
    const std::string& why() const { return why_; }

   private:
    friend class ResourceStore;
    Writer(ResourceStore* store, std::string id, UniqueFd fd, int64_t limit)
        : store_(store), id_(std::move(id)), fd_(std::move(fd)), limit_(limit) {}
    void Fail(std::string why);
    ResourceStore* store_;
    std::string why_;
    int64_t checked_free_at_ = -1;  // size_ when the filesystem's free space was last read
    std::string id_;
    UniqueFd fd_;
    int64_t limit_;
    int64_t size_ = 0;
    bool failed_ = false;
    bool reclaimed_ = false;  // the store's reclaim was tried for this one
    bool committed_ = false;
  };
  // Called, at most once per resource being written, when the filesystem
  // is short of room: it waits (bounded) for space already on its way back
  // (the executor's removal of ended runs' folders), and the room is read
  // again. Set once, before the first Begin.
  void SetReclaim(std::function<void()> reclaim) { reclaim_ = std::move(reclaim); }

  // A new resource of at most `limit` bytes; null when its file cannot be
  // made.
  std::unique_ptr<Writer> Begin(int64_t limit);
  // Publishes what the writer wrote under `name` (shown to the client, as
  // in "out/big.bin") and returns its URI; nullopt if the writer failed.
  std::optional<std::string> Commit(Writer& w, const std::string& name, const std::string& mime);

  struct Entry {
    std::string uri, name, mime;
    int64_t size = 0;
    Clock::time_point expires;
  };
  // A resource by its URI, opened for reading (the open file outlives an
  // eviction); nullopt when unknown or expired.
  std::optional<std::pair<Entry, UniqueFd>> Open(const std::string& uri);
  // Reads [begin, end) of a file Open gave; false on a short read.
  static bool ReadRange(int fd, int64_t begin, int64_t end, std::string* out);

  // The URI prefix of every resource ("mcp-exec://resource/").
  static const char* UriPrefix();
  int64_t max_bytes() const { return max_bytes_; }
  std::chrono::seconds ttl() const { return ttl_; }
  // Bytes held now, written and being written.
  int64_t used_bytes() const;
  int64_t count() const;

 private:
  ResourceStore(std::string dir, int64_t max_bytes, std::chrono::seconds ttl, int64_t keep_free)
      : dir_(std::move(dir)), max_bytes_(max_bytes), ttl_(ttl), keep_free_(keep_free) {}
  // "" when n more bytes leave the filesystem keep_free_ free, else why not.
  std::string FilesystemRoom(int64_t n) const;
  // Room for n more bytes, evicting the oldest; false if there is none.
  bool ReserveLocked(int64_t n);
  void DropExpiredLocked(Clock::time_point now);
  void RemoveOldestLocked();
  void Release(int64_t n);
  std::string PathOf(const std::string& id) const { return dir_ + "/" + id; }

  const std::string dir_;
  UniqueFd hold_;  // dir_/.lock, held while the store lives (SweepUnheldDirs)
  const int64_t max_bytes_;
  const std::chrono::seconds ttl_;
  const int64_t keep_free_;
  std::function<void()> reclaim_;
  mutable std::mutex mu_;
  int64_t used_ = 0;
  std::map<std::string, Entry> entries_;  // by id
  std::list<std::string> order_;          // ids, oldest first
};

}  // namespace mcpexec
