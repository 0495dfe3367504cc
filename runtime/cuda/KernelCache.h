// Compiled kernels, cached in memory and on disk.
//
// The key is the SHA-256 of the source, the compiler options, the GPU architecture and the NVRTC
// version, so a changed kernel, option, GPU or compiler never reuses a stale binary. A disk entry
// holds a header (magic, key, payload size, SHA-256 of the payload) and the payload; it is written
// to a temporary file and renamed into place, so readers, other processes included, see a whole
// entry or none. An entry that is truncated or fails its checksum is removed and rebuilt.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace scanforge::cuda {

class KernelCache {
 public:
  // Caches on disk under `directory`; an empty path caches in memory only.
  explicit KernelCache(std::filesystem::path directory);

  // $SCANFORGE_KERNEL_CACHE, else $XDG_CACHE_HOME/scanforge/kernels, else
  // $HOME/.cache/scanforge/kernels; empty when none is set.
  static std::filesystem::path defaultDirectory();

  static std::string key(const std::string &source, const std::vector<std::string> &options, const std::string &arch,
                         const std::string &compilerVersion);

  // The binary for `key`: from memory, else from disk, else `compile()`d and stored.
  std::shared_ptr<const std::string> get(const std::string &key, const std::function<std::string()> &compile);

  struct Stats {
    int memoryHits = 0, diskHits = 0, compiles = 0, corrupt = 0, writeFailures = 0;
  };
  Stats stats() const;
  const std::filesystem::path &directory() const { return directory_; }
  std::filesystem::path entryPath(const std::string &key) const;

 private:
  std::shared_ptr<const std::string> readEntry(const std::string &key);
  void writeEntry(const std::string &key, const std::string &payload);

  std::filesystem::path directory_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const std::string>> memory_;
  Stats stats_;
};

}  // namespace scanforge::cuda
