// Requests are formed per source line, so host-compiler artefacts do not reach the model: a float4
// split into four 4-byte loads is one 16-byte request (16 sectors per warp, not 64), and a store
// duplicated into both arms of a branch is still one request per step for the whole warp.
#include <gtest/gtest.h>

#include "tools/gpu/emulator/TrafficRecorder.h"

namespace scanforge::gpu {
namespace {

constexpr uintptr_t kBase = 1 << 20;

std::vector<std::vector<LaneAccess> *> pointers(std::vector<std::vector<LaneAccess>> &logs) {
  std::vector<std::vector<LaneAccess> *> out;
  for (auto &l : logs) out.push_back(&l);
  return out;
}

TEST(TrafficMerge, SplitVectorLoadIsOneRequest) {
  // Each lane reads a float4 at 16 * lane as four 4-byte loads at pcs 1..4 of one line (key 1),
  // interleaved with a second float4 from another array on the same line.
  std::vector<std::vector<LaneAccess>> logs(32);
  for (uintptr_t lane = 0; lane < 32; ++lane)
    for (uintptr_t c = 0; c < 4; ++c) {
      logs[lane].push_back({1 + c, kBase + 16 * lane + 4 * c, 4, false, false});
      logs[lane].push_back({1 + c, 2 * kBase + 16 * lane + 4 * c, 4, false, false});
    }
  std::map<uintptr_t, PcTraffic> into;
  SectorOwners owners;
  auto lanes = pointers(logs);
  TrafficRecorder::mergeWarp(lanes, into, [](const LaneAccess &) { return uintptr_t{1}; }, 0, owners);
  ASSERT_EQ(into.size(), 1u);
  EXPECT_EQ(into[1].requests, 2u);
  EXPECT_EQ(into[1].sectors, 32u);  // 16 per array
  EXPECT_EQ(into[1].laneBytes, 2u * 32 * 16);
  EXPECT_EQ(into[1].bytesPerLane, 16u);
  EXPECT_TRUE(logs[0].empty());
}

TEST(TrafficMerge, BranchArmsOfOneStoreAreOneRequest) {
  // Two steps; even lanes store through pc 10, odd lanes through pc 11 (the same line, key 10).
  std::vector<std::vector<LaneAccess>> logs(32);
  for (uintptr_t lane = 0; lane < 32; ++lane)
    for (uintptr_t step = 0; step < 2; ++step)
      logs[lane].push_back({10 + lane % 2, kBase + 4096 * step + 4 * lane, 4, true, false});
  std::map<uintptr_t, PcTraffic> into;
  SectorOwners owners;
  auto lanes = pointers(logs);
  TrafficRecorder::mergeWarp(lanes, into, [](const LaneAccess &a) { return a.pc - a.pc % 2; }, 0, owners);
  ASSERT_EQ(into.size(), 1u);
  EXPECT_EQ(into[10].requests, 2u);
  EXPECT_EQ(into[10].sectors, 8u);  // 4 per step: coalesced
  EXPECT_TRUE(into[10].store);
}

TEST(TrafficMerge, ScalarNeighboursOfDifferentLinesStayApart) {
  // a[2i] and a[2i+1] from two lines: two 4-byte requests, not one 8-byte one.
  std::vector<std::vector<LaneAccess>> logs(32);
  for (uintptr_t lane = 0; lane < 32; ++lane) {
    logs[lane].push_back({20, kBase + 8 * lane, 4, false, false});
    logs[lane].push_back({21, kBase + 8 * lane + 4, 4, false, false});
  }
  std::map<uintptr_t, PcTraffic> into;
  SectorOwners owners;
  auto lanes = pointers(logs);
  TrafficRecorder::mergeWarp(lanes, into, [](const LaneAccess &a) { return a.pc; }, 0, owners);
  EXPECT_EQ(into[20].requests + into[21].requests, 2u);
  EXPECT_EQ(into[20].bytesPerLane, 4u);
}

// DRAM sectors: a sector another warp touched first is a cache hit; a warp's own re-read is not.
TEST(TrafficMerge, SectorsOtherWarpsTouchedFirstAreCacheHits) {
  auto read = [](uintptr_t address) {
    std::vector<std::vector<LaneAccess>> logs(32);
    for (uintptr_t lane = 0; lane < 32; ++lane) logs[lane].push_back({30, address + 4 * lane, 4, false, false});
    return logs;
  };
  std::map<uintptr_t, PcTraffic> into;
  SectorOwners owners;
  auto merge = [&](std::vector<std::vector<LaneAccess>> logs, uint64_t warp) {
    auto lanes = pointers(logs);
    TrafficRecorder::mergeWarp(lanes, into, [](const LaneAccess &a) { return a.pc; }, warp, owners);
  };
  merge(read(kBase), 0);        // warp 0 reads 4 sectors from DRAM
  merge(read(kBase), 1);        // warp 1 reads the same row: hits
  merge(read(kBase + 64), 1);   // half of it again (hits) and 2 new sectors
  merge(read(kBase), 0);        // warp 0 again: its own data, moved again (a rescan)
  EXPECT_EQ(into[30].sectors, 16u);
  EXPECT_EQ(into[30].dramSectors, 4u + 0 + 2 + 4);
}

}  // namespace
}  // namespace scanforge::gpu
