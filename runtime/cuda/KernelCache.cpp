#include "runtime/cuda/KernelCache.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/cuda/Sha256.h"

namespace scanforge::cuda {

namespace {

constexpr char kMagic[8] = {'S', 'F', 'K', 'C', 'A', 'C', 'H', '1'};
constexpr size_t kKeySize = 64;  // hex SHA-256
constexpr size_t kHeaderSize = sizeof kMagic + kKeySize + 8 + 32;

std::string header(const std::string &key, const std::string &payload) {
  std::string h(kMagic, sizeof kMagic);
  h += key;
  uint64_t size = payload.size();
  for (int i = 0; i < 8; ++i) h += static_cast<char>(size >> (8 * i));
  Sha256Digest sum = sha256(payload);
  h.append(reinterpret_cast<const char *>(sum.data()), sum.size());
  return h;
}

bool writeAll(int fd, const std::string &data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

KernelCache::KernelCache(std::filesystem::path directory) : directory_(std::move(directory)) {}

std::filesystem::path KernelCache::defaultDirectory() {
  if (const char *dir = std::getenv("SCANFORGE_KERNEL_CACHE"); dir && *dir) return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "scanforge" / "kernels";
  if (const char *home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "scanforge" / "kernels";
  return {};
}

std::string KernelCache::key(const std::string &source, const std::vector<std::string> &options, const std::string &arch,
                             const std::string &compilerVersion) {
  // Length-prefixed fields, so that no two different inputs concatenate to the same text.
  std::ostringstream all;
  auto field = [&](const std::string &s) { all << s.size() << ':' << s << ';'; };
  field(source);
  for (const std::string &o : options) field(o);
  field("arch=" + arch);
  field("nvrtc=" + compilerVersion);
  return hex(sha256(all.str()));
}

std::filesystem::path KernelCache::entryPath(const std::string &key) const { return directory_ / (key + ".bin"); }

KernelCache::Stats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::shared_ptr<const std::string> KernelCache::get(const std::string &key, const std::function<std::string()> &compile) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++stats_.memoryHits;
      return it->second;
    }
  }
  std::shared_ptr<const std::string> binary = directory_.empty() ? nullptr : readEntry(key);
  bool fromDisk = binary != nullptr;
  if (!binary) {
    binary = std::make_shared<const std::string>(compile());
    if (!directory_.empty()) writeEntry(key, *binary);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++(fromDisk ? stats_.diskHits : stats_.compiles);
  return memory_.emplace(key, binary).first->second;
}

std::shared_ptr<const std::string> KernelCache::readEntry(const std::string &key) {
  std::filesystem::path path = entryPath(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bool ok = data.size() >= kHeaderSize && data.compare(0, sizeof kMagic, kMagic, sizeof kMagic) == 0 &&
            data.compare(sizeof kMagic, kKeySize, key) == 0;
  if (ok) {
    std::string payload = data.substr(kHeaderSize);
    if (header(key, payload) == data.substr(0, kHeaderSize)) return std::make_shared<const std::string>(std::move(payload));
  }
  // Truncated, or not what was written: rebuild it.
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.corrupt;
  return nullptr;
}

void KernelCache::writeEntry(const std::string &key, const std::string &payload) {
  static std::atomic<unsigned> counter{0};
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  std::filesystem::path target = entryPath(key);
  std::filesystem::path temp = directory_ / (key + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && writeAll(fd, header(key, payload)) && writeAll(fd, payload) && ::fsync(fd) == 0;
  std::string why = ok ? "" : std::strerror(errno);
  if (fd >= 0) ::close(fd);
  if (ok && std::rename(temp.c_str(), target.c_str()) != 0) {
    ok = false;
    why = std::strerror(errno);
  }
  if (ok) return;
  std::filesystem::remove(temp, error);
  std::lock_guard<std::mutex> lock(mutex_);
  if (stats_.writeFailures++ == 0)
    std::cerr << "scanforge: warning: cannot write the kernel cache entry " << target.string() << ": " << why
              << " (kernels will be compiled again next time)\n";
}

}  // namespace scanforge::cuda
