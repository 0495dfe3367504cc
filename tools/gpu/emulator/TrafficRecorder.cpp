#include "tools/gpu/emulator/TrafficRecorder.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

namespace scanforge::gpu {

namespace {

// A lane's log with each access keyed by its line, and the parts of a vector access that the host
// compiler split (adjacent, same line and kind, one aligned 16-byte block, each part its own host
// instruction) joined again. The last few accesses are searched: the parts of two float4 loads may
// interleave. Accesses of one host instruction are never joined: they are a loop's iterations,
// which the GPU code unrolls into an instruction each (the selective SSM's 16 loads of B[t, n] per
// step, once counted as 4 requests of 16 bytes).
std::vector<LaneAccess> joinedByLine(const std::vector<LaneAccess> &log, const std::function<uintptr_t(const LaneAccess &)> &lineOf) {
  constexpr size_t kWindow = 8;
  std::vector<LaneAccess> joined;
  std::vector<std::vector<uintptr_t>> parts;  // the host instructions each joined access came from
  for (LaneAccess a : log) {
    uintptr_t host = a.pc;
    a.pc = lineOf(a);
    bool merged = false;
    for (size_t back = 1; back <= std::min(kWindow, joined.size()) && !merged; ++back) {
      LaneAccess &b = joined[joined.size() - back];
      std::vector<uintptr_t> &from = parts[parts.size() - back];
      if (b.pc == a.pc && b.store == a.store && b.shared == a.shared && b.address + b.bytes == a.address &&
          b.address / 16 == (a.address + a.bytes - 1) / 16 && std::find(from.begin(), from.end(), host) == from.end()) {
        b.bytes += a.bytes;
        from.push_back(host);
        merged = true;
      }
    }
    if (!merged) {
      joined.push_back(a);
      parts.push_back({host});
    }
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

void TrafficRecorder::addTurn(uint64_t warp, const std::vector<std::vector<LaneAccess> *> &lanes) {
  std::map<uintptr_t, Line> &lines = warps_[warp];
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    if (!lanes[lane]) continue;
    for (const LaneAccess &a : joinedByLine(*lanes[lane], lineOf_)) {
      Line &line = lines[a.pc];
      line.executed.resize(lanes.size(), 0);
      size_t k = line.executed[lane]++;
      if (k < line.completed) continue;  // not reached: a request completes when every running lane made it
      while (line.open.size() <= k - line.completed) {
        PcTraffic &t = into_[a.pc];
        t.store = a.store;
        t.shared = a.shared;
        line.open.push_back(Request{&t, {}, 0, 0});
      }
      Request &r = line.open[k - line.completed];
      r.laneBytes += a.bytes;
      r.widest = std::max(r.widest, a.bytes);
      if (a.shared) {
        for (uintptr_t w = a.address / 4; w <= (a.address + a.bytes - 1) / 4; ++w) r.sectors.push_back(w);
      } else {
        for (uintptr_t s = a.address / 32; s <= (a.address + a.bytes - 1) / 32; ++s) r.sectors.push_back(s);
      }
    }
    lanes[lane]->clear();
  }
  // Requests every running lane has made are complete.
  for (auto &[pc, line] : lines) {
    size_t made = SIZE_MAX;
    for (size_t lane = 0; lane < lanes.size(); ++lane)
      if (lanes[lane]) made = std::min(made, lane < line.executed.size() ? line.executed[lane] : 0);
    for (; line.completed < made && !line.open.empty(); ++line.completed) {
      complete(warp, line.open.front());
      line.open.pop_front();
    }
  }
}

void TrafficRecorder::finishWarp(uint64_t warp) {
  auto it = warps_.find(warp);
  if (it == warps_.end()) return;
  for (auto &[pc, line] : it->second)
    for (Request &r : line.open) complete(warp, r);
  warps_.erase(it);
}

void TrafficRecorder::complete(uint64_t warp, Request &r) {
  PcTraffic &t = *r.totals;
  ++t.requests;
  t.laneBytes += r.laneBytes;
  t.bytesPerLane = std::max(t.bytesPerLane, r.widest);
  if (t.shared) {
    t.wavefronts += bankWavefronts(r.sectors, r.widest);
    return;
  }
  std::sort(r.sectors.begin(), r.sectors.end());
  r.sectors.erase(std::unique(r.sectors.begin(), r.sectors.end()), r.sectors.end());
  t.sectors += r.sectors.size();
  for (uint64_t s : r.sectors)
    if (owners_.try_emplace(s, warp).first->second == warp) ++t.dramSectors;
}

}  // namespace scanforge::gpu
