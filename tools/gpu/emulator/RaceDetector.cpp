#include "tools/gpu/emulator/RaceDetector.h"

#include <algorithm>

namespace scanforge::gpu {

namespace {

bool keyLess(const std::pair<uint32_t, uint32_t> &entry, uint32_t key) { return entry.first < key; }

}  // namespace

uint32_t Clock::at(uint32_t key) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key, keyLess);
  return it != entries_.end() && it->first == key ? it->second : 0;
}

void Clock::raise(uint32_t key, uint32_t value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key, keyLess);
  if (it != entries_.end() && it->first == key)
    it->second = std::max(it->second, value);
  else
    entries_.insert(it, {key, value});
}

void Clock::join(const Clock &other) {
  if (other.entries_.empty()) return;
  if (entries_.empty()) {
    entries_ = other.entries_;
    return;
  }
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  merged.reserve(entries_.size() + other.entries_.size());
  auto a = entries_.cbegin(), b = other.entries_.cbegin();
  while (a != entries_.cend() || b != other.entries_.cend()) {
    if (b == other.entries_.cend() || (a != entries_.cend() && a->first < b->first))
      merged.push_back(*a++);
    else if (a == entries_.cend() || b->first < a->first)
      merged.push_back(*b++);
    else {
      merged.push_back({a->first, std::max(a->second, b->second)});
      ++a, ++b;
    }
  }
  entries_ = std::move(merged);
}

void Knowledge::join(const Knowledge &other) {
  blockEpochs.join(other.blockEpochs);
  releases.join(other.releases);
}

namespace {

bool ordered(const Stamp &a, const Accessor &who) {
  if (a.thread == who.thread + 1) return true;
  uint32_t aThread = a.thread - 1, aBlock = aThread / who.threadsPerBlock;
  if (aBlock == who.block) {
    if (a.epoch < who.epoch) return true;
    if (aThread / 32 == who.thread / 32 && a.epoch == who.epoch && a.warpEpoch < who.warpEpoch) return true;
  }
  if (!who.knowledge) return false;
  return a.epoch < who.knowledge->blockEpochs.at(aBlock) || a.release < who.knowledge->releases.at(a.thread);
}

bool conflicts(const Stamp &earlier, const Stamp &later) {
  if (!earlier.thread || !(earlier.bytes & later.bytes)) return false;
  bool plainWrite = (earlier.write && !earlier.sync) || (later.write && !later.sync);
  return plainWrite && (earlier.write || later.write);
}

}  // namespace

bool checkAndRecord(ShadowWord &word, const Accessor &who, const Stamp &access, Race &race) {
  bool found = false;
  if (conflicts(word.write, access) && !ordered(word.write, who)) {
    race = {word.write, access};
    found = true;
  } else if (access.write && conflicts(word.read, access) && !ordered(word.read, who)) {
    race = {word.read, access};
    found = true;
  }
  if (access.write) {
    word.write = access;
    word.read = Stamp{};
  } else {
    word.read = access;
  }
  return found;
}

}  // namespace scanforge::gpu
