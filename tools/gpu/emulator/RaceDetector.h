// Data races between emulated CUDA threads: two accesses to one address from different threads,
// at least one a plain (non-atomic, non-volatile) write, with no synchronisation ordering them.
//
// Ordering is what CUDA gives: within a block, __syncthreads (a barrier epoch) and, within a
// warp, __syncwarp and shuffles (a warp epoch); between blocks, release/acquire through memory —
// a thread releases by a volatile or atomic write after a __threadfence (since its last plain
// write), and a thread acquires by a volatile or atomic access of that location. What a thread has
// acquired is its Knowledge: blocks whose earlier barrier epochs are complete, and threads whose
// accesses before a release are complete. Shadow memory keeps, per 4-byte word, the last write
// and the last read (a race with an older read can go unseen; a reported race is always real).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace scanforge::gpu {

// A map from a block or thread index to a count, sorted by index: a join is one merge and a copy one
// allocation (with hash maps, allocating and re-hashing nodes was half of the emulator's time).
class Clock {
 public:
  uint32_t at(uint32_t key) const;  // 0 where absent
  void raise(uint32_t key, uint32_t value);  // at(key) becomes at least value
  void join(const Clock &other);  // the larger count of each key

 private:
  std::vector<std::pair<uint32_t, uint32_t>> entries_;
};

struct Knowledge {
  Clock blockEpochs;  // block -> barrier epochs < this are complete
  Clock releases;     // thread -> accesses with release count < this
  void join(const Knowledge &other);
};

// Who accessed a word, and when, in the terms above.
struct Stamp {
  uint32_t thread = 0;  // global thread index + 1; 0: nobody
  uint32_t epoch = 0;   // the block's barrier epoch
  uint32_t warpEpoch = 0;
  uint32_t release = 0;  // the thread's releases before the access
  uint32_t pc = 0;       // offset of the instruction in the kernel library
  uint8_t bytes = 0;     // which bytes of the word (bit mask)
  bool sync = false;     // volatile or atomic
  bool write = false;
};

struct ShadowWord {
  Stamp write, read;
};

// The accessing thread's view, filled by the scheduler.
struct Accessor {
  uint32_t thread;  // global thread index
  uint32_t block;   // global block index
  uint32_t threadsPerBlock;
  uint32_t epoch, warpEpoch, release;
  const Knowledge *knowledge;  // may be null: nothing acquired
};

struct Race {
  Stamp earlier, later;
};

// Checks one access of a word against its shadow and records it; returns the race, if any.
bool checkAndRecord(ShadowWord &word, const Accessor &who, const Stamp &access, Race &race);

// Shadow words for one span of memory (an allocation or a block's shared memory), made on first use.
class Shadow {
 public:
  explicit Shadow(size_t bytes) : words_((bytes + 3) / 4) {}
  ShadowWord &word(size_t offset) { return words_[offset / 4]; }
  void grow(size_t bytes) { words_.resize(std::max(words_.size(), (bytes + 3) / 4)); }

 private:
  std::vector<ShadowWord> words_;
};

}  // namespace scanforge::gpu
