// Turns the loads and stores of a warp's lanes into warp-level requests (tools/gpu/emulator/Traffic.h).
//
// The scheduler runs the lanes of a warp one after another, each until it yields (after a fixed
// number of accesses, or at a synchronisation), so the lanes' logs cover the same stretch of the
// program. The k-th execution of a source line's access by each lane is one request of the warp;
// its sectors are the distinct 32-byte segments the lanes touched, its shared-memory wavefronts the
// most distinct words any one of the 32 banks had to serve.
//
// Instructions are identified by source line, not by host program counter, because the host
// compiler is not the GPU's: it splits a float4 load into four 4-byte loads (a lane's adjacent
// accesses of one line within an aligned 16-byte block are joined again, as LDG.E.128) and
// duplicates a store into both arms of a branch (lanes on different arms are still one request).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/gpu/emulator/Traffic.h"

namespace scanforge::gpu {

struct LaneAccess {
  uintptr_t pc;
  uintptr_t address;
  uint32_t bytes;
  bool store, shared;
};

// Totals per instruction (by program counter) of one kernel, before source lines are known.
struct PcTraffic {
  bool store = false, shared = false;
  unsigned bytesPerLane = 0;
  uint64_t requests = 0, sectors = 0, dramSectors = 0, laneBytes = 0, wavefronts = 0;
};

// The warp that first touched each global sector of a launch (Traffic.h: the rule for caches).
using SectorOwners = std::unordered_map<uint64_t, uint64_t>;

class TrafficRecorder {
 public:
  // Merges the logs of one warp's lanes (cleared afterwards) into `into`, keyed by `lineOf(access)`:
  // one program counter of the accesses of the same kind (load or store, global or shared) on the
  // access's source line.
  // `warp` is the warp's index in the launch; `owners` the launch's first toucher of each sector.
  static void mergeWarp(std::vector<std::vector<LaneAccess> *> &lanes, std::map<uintptr_t, PcTraffic> &into,
                        const std::function<uintptr_t(const LaneAccess &)> &lineOf, uint64_t warp, SectorOwners &owners);
};

}  // namespace scanforge::gpu
