// Turns the loads and stores of a warp's lanes into warp-level requests (tools/gpu/emulator/Traffic.h).
//
// The scheduler runs the lanes of a warp one after another, each until it yields (after a fixed
// number of accesses, or at a synchronisation). The k-th execution of a source line's access by
// each lane, counted over the whole launch, is the warp's k-th request at that line: lanes that
// make different numbers of accesses (a store only lane 0 of each channel makes) drift apart from
// turn to turn, and counting per turn made one request several (the selective SSM's chunked
// backward: 2.8 requests per load). A request's sectors are the distinct 32-byte segments its
// lanes touched, its shared-memory wavefronts the most distinct words any one of the 32 banks had
// to serve. A request is complete once every lane still running has made its k-th access at the
// line; the rest when the warp ends.
//
// Instructions are identified by source line, not by host program counter, because the host
// compiler is not the GPU's: it splits a float4 load into four 4-byte loads (a lane's adjacent
// accesses of one line within an aligned 16-byte block, each from its own host instruction, are
// joined again, as LDG.E.128), keeps loops the GPU code unrolls (the iterations of one host
// instruction stay requests of their own) and duplicates a store into both arms of a branch
// (lanes on different arms are still one request).
#pragma once

#include <cstdint>
#include <deque>
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
  // Adds to `into`, keyed by `lineOf(access)`: one program counter of the accesses of the same kind
  // (load or store, global or shared) on the access's source line. `owners`: the launch's first
  // toucher of each sector.
  TrafficRecorder(std::map<uintptr_t, PcTraffic> &into, SectorOwners &owners,
                  std::function<uintptr_t(const LaneAccess &)> lineOf)
      : into_(into), owners_(owners), lineOf_(std::move(lineOf)) {}

  // Takes the logs of warp `warp`'s lanes since their last turn (each cleared afterwards); `lanes[i]`
  // is lane i's, null for a lane that has exited. `warp` is the warp's index in the launch.
  void addTurn(uint64_t warp, const std::vector<std::vector<LaneAccess> *> &lanes);
  // Completes the warp's remaining requests: its lanes have all exited, or the launch ended.
  void finishWarp(uint64_t warp);

 private:
  struct Request {
    PcTraffic *totals;
    std::vector<uint64_t> sectors;  // global: 32-byte segment indices; shared: word indices
    uint64_t laneBytes = 0;
    unsigned widest = 0;
  };
  struct Line {
    std::vector<size_t> executed;  // per lane: its accesses at the line so far
    size_t completed = 0;          // requests before this one are complete
    std::deque<Request> open;      // requests completed, completed + 1, ...
  };
  void complete(uint64_t warp, Request &r);

  std::map<uintptr_t, PcTraffic> &into_;
  SectorOwners &owners_;
  std::function<uintptr_t(const LaneAccess &)> lineOf_;
  std::unordered_map<uint64_t, std::map<uintptr_t, Line>> warps_;  // open requests, by warp and line
};

}  // namespace scanforge::gpu
