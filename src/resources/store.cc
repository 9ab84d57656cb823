#include "resources/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/fs_util.h"
#include "base/log.h"
#include "base/random.h"
#include "base/utf8.h"

namespace mcpexec {

namespace {

constexpr char kUriPrefix[] = "mcp-exec://resource/";

// 16 random bytes as 32 hex digits: 128 bits, past a UUIDv4's 122.
std::string NewId() {
  unsigned char bytes[16];
  RandomBytes(bytes, sizeof bytes);
  static const char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 0xF];
  }
  return id;
}

}  // namespace

const char* ResourceStore::UriPrefix() { return kUriPrefix; }

std::unique_ptr<ResourceStore> ResourceStore::Create(const std::string& root, int64_t max_bytes,
                                                     std::chrono::seconds ttl, int64_t keep_free,
                                                     std::string* error) {
  std::string dir = MakePrivateDir(root, "mcp-exec-resources-");
  if (dir.empty()) {
    *error = "mkdtemp(" + root + "/mcp-exec-resources-XXXXXX): " + strerror(errno);
    return nullptr;
  }
  std::unique_ptr<ResourceStore> store(new ResourceStore(dir, max_bytes, ttl, keep_free));
  if (!HoldDir(dir, &store->hold_)) {
    *error = "the resource store's lock " + dir + "/.lock: " + strerror(errno);
    return nullptr;
  }
  return store;
}

ResourceStore::~ResourceStore() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, entry] : entries_) unlink(PathOf(id).c_str());
  entries_.clear();
  RemoveTree(dir_);
}

ResourceStore::Writer::~Writer() {
  if (!committed_) Fail("it was not finished");
}

void ResourceStore::Writer::Fail(std::string why) {
  if (!failed_ && !committed_) {
    failed_ = true;
    why_ = std::move(why);
    fd_.Reset();
    unlink(store_->PathOf(id_).c_str());
    store_->Release(size_);
  }
}

std::string ResourceStore::FilesystemRoom(int64_t n) const {
  if (keep_free_ <= 0) return "";
  struct statvfs fs {};
  if (statvfs(dir_.c_str(), &fs) != 0) return "";
  const auto free_bytes = static_cast<int64_t>(fs.f_bavail * fs.f_frsize);
  if (free_bytes - n >= keep_free_) return "";
  return "its filesystem has " + std::to_string(free_bytes >> 20) +
         " MiB free, and the store leaves " + std::to_string(keep_free_ >> 20) +
         " MiB of it to the runs' own files";
}

bool ResourceStore::Writer::Write(const char* data, size_t n) {
  if (failed_ || committed_) return false;
  const auto add = static_cast<int64_t>(n);
  if (size_ + add > limit_) {
    Fail("it passed the " + std::to_string(limit_) + " bytes one stream or file may keep");
    return false;
  }
  // The filesystem's free space, read at the first write and once a MiB.
  if (checked_free_at_ < 0 || size_ + add - checked_free_at_ >= (int64_t{1} << 20)) {
    checked_free_at_ = size_ + add;
    const int64_t want = std::max<int64_t>(add, int64_t{1} << 20);
    std::string why = store_->FilesystemRoom(want);
    if (!why.empty() && !reclaimed_ && store_->reclaim_) {
      // The room may be an ended run's folder still being removed: wait
      // for that once, then look again.
      reclaimed_ = true;
      store_->reclaim_();
      why = store_->FilesystemRoom(want);
    }
    if (!why.empty()) {
      Fail(why);
      return false;
    }
  }
  bool room;
  {
    std::lock_guard<std::mutex> lock(store_->mu_);
    room = store_->ReserveLocked(add);
  }
  if (!room) {
    Fail("it does not fit in the store's " + std::to_string(store_->max_bytes_ >> 20) +
         " MiB (MCP_EXEC_RESOURCE_STORE_MB) beside what is still being written");
    return false;
  }
  size_ += add;  // reserved: Fail() gives it back
  while (n > 0) {
    ssize_t w = write(fd_.get(), data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      // ENOSPC, EIO: the resource is lost, never served cut.
      Fail(std::string("the disk refused it: ") + strerror(w < 0 ? errno : ENOSPC));
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

std::unique_ptr<ResourceStore::Writer> ResourceStore::Begin(int64_t limit) {
  std::string id = NewId();
  UniqueFd fd(open(PathOf(id).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) {
    log::Warn("resource_store_write_failed", {{"error", strerror(errno)}});
    return nullptr;
  }
  return std::unique_ptr<Writer>(new Writer(this, std::move(id), std::move(fd), limit));
}

std::optional<std::string> ResourceStore::Commit(Writer& w, const std::string& name,
                                                 const std::string& mime) {
  if (w.failed_ || w.committed_) return std::nullopt;
  w.fd_.Reset();
  w.committed_ = true;
  Entry e{kUriPrefix + w.id_ + "/" + UriPathEscape(name), name, mime, w.size_, Clock::now() + ttl_};
  std::lock_guard<std::mutex> lock(mu_);
  entries_[w.id_] = e;
  order_.push_back(w.id_);
  return e.uri;
}

std::optional<std::pair<ResourceStore::Entry, UniqueFd>> ResourceStore::Open(
    const std::string& uri) {
  const std::string prefix = kUriPrefix;
  if (uri.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const size_t slash = uri.find('/', prefix.size());
  const std::string id = uri.substr(
      prefix.size(), slash == std::string::npos ? std::string::npos : slash - prefix.size());
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked(Clock::now());
  auto it = entries_.find(id);
  // The whole URI must be the one handed out: its id alone is the secret,
  // but a name that differs is not this resource.
  if (it == entries_.end() || it->second.uri != uri) return std::nullopt;
  UniqueFd fd(open(PathOf(id).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  return std::make_pair(it->second, std::move(fd));
}

int64_t ResourceStore::used_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

int64_t ResourceStore::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(entries_.size());
}

bool ResourceStore::ReserveLocked(int64_t n) {
  if (n > max_bytes_) return false;
  DropExpiredLocked(Clock::now());
  while (used_ + n > max_bytes_ && !order_.empty()) {
    log::Info("resource_evicted", {{"bytes", entries_[order_.front()].size}});
    RemoveOldestLocked();
  }
  if (used_ + n > max_bytes_) return false;  // the rest is being written
  used_ += n;
  return true;
}

void ResourceStore::DropExpiredLocked(Clock::time_point now) {
  // One TTL for all: the oldest expire first.
  while (!order_.empty() && entries_[order_.front()].expires <= now) RemoveOldestLocked();
}

void ResourceStore::RemoveOldestLocked() {
  auto it = entries_.find(order_.front());
  unlink(PathOf(it->first).c_str());
  used_ -= it->second.size;
  entries_.erase(it);
  order_.pop_front();
}

void ResourceStore::Release(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  used_ -= n;
}

bool ResourceStore::ReadRange(int fd, int64_t begin, int64_t end, std::string* out) {
  out->assign(static_cast<size_t>(end - begin), '\0');
  size_t got = 0;
  while (got < out->size()) {
    ssize_t n = pread(fd, out->data() + got, out->size() - got,
                      static_cast<off_t>(begin + static_cast<int64_t>(got)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace mcpexec
