#include "tools/gpu/emulator/RaceDetector.h"

#include <algorithm>

namespace scanforge::gpu {

void Knowledge::join(const Knowledge &other) {
  for (auto [block, epoch] : other.blockEpochs) {
    uint32_t &mine = blockEpochs[block];
    mine = std::max(mine, epoch);
  }
  for (auto [thread, count] : other.releases) {
    uint32_t &mine = releases[thread];
    mine = std::max(mine, count);
  }
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
  auto e = who.knowledge->blockEpochs.find(aBlock);
  if (e != who.knowledge->blockEpochs.end() && a.epoch < e->second) return true;
  auto r = who.knowledge->releases.find(a.thread);
  return r != who.knowledge->releases.end() && a.release < r->second;
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
