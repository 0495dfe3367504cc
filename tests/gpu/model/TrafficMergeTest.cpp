// Requests are formed per source line, so host-compiler artefacts do not reach the model: a float4
// split into four 4-byte loads is one 16-byte request (16 sectors per warp, not 64), a loop the
// host keeps and the GPU unrolls is one request per iteration, and a store
// duplicated into both arms of a branch is still one request per step for the whole warp; and per
// execution over the launch, so the emulator's turns do not reach it either.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "tools/gpu/emulator/TrafficRecorder.h"

namespace scanforge::gpu {
namespace {

constexpr uintptr_t kBase = 1 << 20;

std::vector<std::vector<LaneAccess> *> pointers(std::vector<std::vector<LaneAccess>> &logs) {
  std::vector<std::vector<LaneAccess> *> out;
  for (auto &l : logs) out.push_back(&l);
  return out;
}

// The requests of one turn of warp 0 whose lanes logged `logs` (cleared by the turn), by line key.
std::map<uintptr_t, PcTraffic> oneTurn(std::vector<std::vector<LaneAccess>> &logs,
                                       std::function<uintptr_t(const LaneAccess &)> lineOf) {
  std::map<uintptr_t, PcTraffic> into;
  SectorOwners owners;
  TrafficRecorder recorder(into, owners, std::move(lineOf));
  recorder.addTurn(0, pointers(logs));
  return into;
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
  std::map<uintptr_t, PcTraffic> into = oneTurn(logs, [](const LaneAccess &) { return uintptr_t{1}; });
  ASSERT_EQ(into.size(), 1u);
  EXPECT_EQ(into[1].requests, 2u);
  EXPECT_EQ(into[1].sectors, 32u);  // 16 per array
  EXPECT_EQ(into[1].laneBytes, 2u * 32 * 16);
  EXPECT_EQ(into[1].bytesPerLane, 16u);
  EXPECT_TRUE(logs[0].empty());
}

TEST(TrafficMerge, IterationsOfOneHostInstructionStayApart) {
  // Every lane reads b[0..15] in a loop the host compiler kept (one pc, 2) and the GPU code unrolls
  // into 16 loads, as the selective SSM reads B[t, n] with one lane per channel: 16 requests of one
  // sector each (every lane reads the same word), not 4 of 16 bytes.
  std::vector<std::vector<LaneAccess>> logs(32);
  for (uintptr_t lane = 0; lane < 32; ++lane)
    for (uintptr_t n = 0; n < 16; ++n) logs[lane].push_back({2, kBase + 4 * n, 4, false, false});
  std::map<uintptr_t, PcTraffic> into = oneTurn(logs, [](const LaneAccess &) { return uintptr_t{2}; });
  ASSERT_EQ(into.size(), 1u);
  EXPECT_EQ(into[2].requests, 16u);
  EXPECT_EQ(into[2].sectors, 16u);
  EXPECT_EQ(into[2].bytesPerLane, 4u);
}

TEST(TrafficMerge, BranchArmsOfOneStoreAreOneRequest) {
  // Two steps; even lanes store through pc 10, odd lanes through pc 11 (the same line, key 10).
  std::vector<std::vector<LaneAccess>> logs(32);
  for (uintptr_t lane = 0; lane < 32; ++lane)
    for (uintptr_t step = 0; step < 2; ++step)
      logs[lane].push_back({10 + lane % 2, kBase + 4096 * step + 4 * lane, 4, true, false});
  std::map<uintptr_t, PcTraffic> into = oneTurn(logs, [](const LaneAccess &a) { return a.pc - a.pc % 2; });
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
  std::map<uintptr_t, PcTraffic> into = oneTurn(logs, [](const LaneAccess &a) { return a.pc; });
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
  TrafficRecorder recorder(into, owners, [](const LaneAccess &a) { return a.pc; });
  auto merge = [&](std::vector<std::vector<LaneAccess>> logs, uint64_t warp) { recorder.addTurn(warp, pointers(logs)); };
  merge(read(kBase), 0);        // warp 0 reads 4 sectors from DRAM
  merge(read(kBase), 1);        // warp 1 reads the same row: hits
  merge(read(kBase + 64), 1);   // half of it again (hits) and 2 new sectors
  merge(read(kBase), 0);        // warp 0 again: its own data, moved again (a rescan)
  EXPECT_EQ(into[30].sectors, 16u);
  EXPECT_EQ(into[30].dramSectors, 4u + 0 + 2 + 4);
}

// Lanes that make different numbers of accesses drift apart from turn to turn: here lane 0 also
// stores at every step. Counted per turn, a step's loads became two requests once lane 0 lagged.
TEST(TrafficMerge, LanesThatDriftApartShareOneRequestPerStep) {
  constexpr size_t kSteps = 12, kTurn = 5;  // accesses a lane makes per turn
  std::vector<std::vector<LaneAccess>> program(32);
  for (uintptr_t lane = 0; lane < 32; ++lane)
    for (uintptr_t step = 0; step < kSteps; ++step) {
      program[lane].push_back({40, kBase + 128 * step + 4 * lane, 4, false, false});
      if (lane == 0) program[lane].push_back({41, 2 * kBase + 32 * step, 4, true, false});
    }
  std::map<uintptr_t, PcTraffic> into;
  SectorOwners owners;
  TrafficRecorder recorder(into, owners, [](const LaneAccess &a) { return a.pc; });
  std::vector<std::vector<LaneAccess>> logs(32);
  std::vector<size_t> next(32, 0);
  for (size_t turn = 0; turn < 2 * kSteps; ++turn) {
    for (size_t lane = 0; lane < 32; ++lane)
      for (size_t i = 0; i < kTurn && next[lane] < program[lane].size(); ++i) logs[lane].push_back(program[lane][next[lane]++]);
    recorder.addTurn(0, pointers(logs));
  }
  ASSERT_EQ(next[0], program[0].size());
  EXPECT_EQ(into[40].requests, kSteps);  // complete once every lane made them
  EXPECT_EQ(into[40].sectors, 4 * kSteps);
  EXPECT_EQ(into[41].requests, 0u);  // only lane 0 makes them: complete when the warp ends
  recorder.finishWarp(0);
  EXPECT_EQ(into[41].requests, kSteps);
  EXPECT_EQ(into[41].sectors, kSteps);
}

}  // namespace
}  // namespace scanforge::gpu
