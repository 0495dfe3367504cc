#include "tools/gpu/emulator/TrafficRecorder.h"

#include <algorithm>
#include <unordered_map>

namespace scanforge::gpu {

namespace {

struct Request {
  PcTraffic *totals;
  std::vector<uint64_t> sectors;  // global: 32-byte segment indices; shared: word indices
  uint64_t laneBytes = 0;
  unsigned widest = 0;
};

// A lane's log with each access keyed by its line, and the parts of a vector access that the host
// compiler split (adjacent, same line and kind, one aligned 16-byte block) joined again. The last
// few accesses are searched: the parts of two float4 loads may interleave.
std::vector<LaneAccess> joinedByLine(const std::vector<LaneAccess> &log, const std::function<uintptr_t(const LaneAccess &)> &lineOf) {
  constexpr size_t kWindow = 8;
  std::vector<LaneAccess> joined;
  for (LaneAccess a : log) {
    a.pc = lineOf(a);
    bool merged = false;
    for (size_t back = 1; back <= std::min(kWindow, joined.size()) && !merged; ++back) {
      LaneAccess &b = joined[joined.size() - back];
      if (b.pc == a.pc && b.store == a.store && b.shared == a.shared && b.address + b.bytes == a.address &&
          b.address / 16 == (a.address + a.bytes - 1) / 16) {
        b.bytes += a.bytes;
        merged = true;
      }
    }
    if (!merged) joined.push_back(a);
  }
  return joined;
}

uint64_t bankWavefronts(std::vector<uint64_t> &words, unsigned widest) {
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  unsigned perBank[32] = {};
  unsigned most = 0;
  for (uint64_t w : words) most = std::max(most, ++perBank[w % 32]);
  // Wide accesses are served a quarter or half warp at a time (128 bytes per wavefront).
  unsigned minimum = std::max(1u, widest * 32 / 128);
  return std::max(most, minimum);
}

}  // namespace

void TrafficRecorder::mergeWarp(std::vector<std::vector<LaneAccess> *> &lanes, std::map<uintptr_t, PcTraffic> &into,
                                const std::function<uintptr_t(const LaneAccess &)> &lineOf, uint64_t warp,
                                SectorOwners &owners) {
  // (line, k-th execution by the lane) -> request
  std::unordered_map<uintptr_t, std::vector<Request>> requests;
  for (std::vector<LaneAccess> *log : lanes) {
    std::unordered_map<uintptr_t, size_t> seen;
    for (const LaneAccess &a : joinedByLine(*log, lineOf)) {
      size_t k = seen[a.pc]++;
      std::vector<Request> &byExecution = requests[a.pc];
      if (byExecution.size() <= k) {
        PcTraffic &t = into[a.pc];
        t.store = a.store;
        t.shared = a.shared;
        byExecution.resize(k + 1, Request{&t, {}, 0, 0});
      }
      Request &r = byExecution[k];
      r.laneBytes += a.bytes;
      r.widest = std::max(r.widest, a.bytes);
      if (a.shared) {
        for (uintptr_t w = a.address / 4; w <= (a.address + a.bytes - 1) / 4; ++w) r.sectors.push_back(w);
      } else {
        for (uintptr_t s = a.address / 32; s <= (a.address + a.bytes - 1) / 32; ++s) r.sectors.push_back(s);
      }
    }
    log->clear();
  }
  for (auto &[pc, byExecution] : requests)
    for (Request &r : byExecution) {
      PcTraffic &t = *r.totals;
      ++t.requests;
      t.laneBytes += r.laneBytes;
      t.bytesPerLane = std::max(t.bytesPerLane, r.widest);
      if (t.shared) {
        t.wavefronts += bankWavefronts(r.sectors, r.widest);
      } else {
        std::sort(r.sectors.begin(), r.sectors.end());
        r.sectors.erase(std::unique(r.sectors.begin(), r.sectors.end()), r.sectors.end());
        t.sectors += r.sectors.size();
        for (uint64_t s : r.sectors)
          if (owners.try_emplace(s, warp).first->second == warp) ++t.dramSectors;
      }
    }
}

}  // namespace scanforge::gpu
