#include "runtime/core/CpuAllocator.h"

#include <sanitizer/asan_interface.h>  // no-op macros unless built with AddressSanitizer

#include <map>
#include <mutex>
#include <new>

namespace scanforge {

namespace {

constexpr std::align_val_t kAlignment{64};  // a cache line; enough for any vector load
constexpr size_t kMinCachedBlock = size_t{1} << 20;

struct Cache {
  std::mutex mutex;
  std::multimap<size_t, std::byte *> blocks;
  size_t bytes = 0;

  ~Cache() { clear(); }

  void clear() {
    for (auto &[size, block] : blocks) {
      ASAN_UNPOISON_MEMORY_REGION(block, size);
      ::operator delete(block, kAlignment);
    }
    blocks.clear();
    bytes = 0;
  }
};

Cache &cache() {
  static Cache instance;
  return instance;
}

}  // namespace

std::byte *allocateCpu(size_t bytes) {
  if (bytes >= kMinCachedBlock) {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.blocks.find(bytes);
    if (it != c.blocks.end()) {
      std::byte *block = it->second;
      c.blocks.erase(it);
      c.bytes -= bytes;
      ASAN_UNPOISON_MEMORY_REGION(block, bytes);
      return block;
    }
  }
  return static_cast<std::byte *>(::operator new(bytes, kAlignment));
}

void releaseCpu(std::byte *block, size_t bytes) {
  if (bytes >= kMinCachedBlock) {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.bytes + bytes <= kMaxCachedBytes) {
      ASAN_POISON_MEMORY_REGION(block, bytes);  // a use after free still fails under ASan
      c.blocks.emplace(bytes, block);
      c.bytes += bytes;
      return;
    }
  }
  ::operator delete(block, kAlignment);
}

size_t cachedCpuBytes() {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.bytes;
}

void emptyCpuCache() {
  Cache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.clear();
}

}  // namespace scanforge
