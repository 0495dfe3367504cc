// The predictor on hand-built traffic and SASS facts, checked against the model's formulas by
// hand: a memory-bound stream, the same stream uncoalesced (sectors cost), and one warp per
// scheduler waiting on its loads (latency-bound).
#include <gtest/gtest.h>

#include <algorithm>

#include "tools/gpu/model/Predictor.h"

namespace scanforge::gpu {
namespace {

// A scalar kernel: one 4-byte load (line 1) and one 4-byte store (line 2) per step, `instructions`
// per iteration of `steps` steps; blocks: an empty entry and the loop.
KernelSass scalarKernel(unsigned instructions, unsigned steps, unsigned registers) {
  KernelSass s;
  s.kernel = "k";
  s.registers = registers;
  InstructionMix loop;
  loop.instructions = instructions;
  loop.globalLoadBytes = 4 * steps;
  loop.globalStoreBytes = 4 * steps;
  loop.loadWaits = 1;
  s.loop = loop;
  s.all = loop;
  s.blocks = {BlockFacts{}, BlockFacts{loop, 0, 1, {{{"k.cu:1", false, false}, steps}, {{"k.cu:2", true, false}, steps}}}};
  return s;
}

// B*T*D elements read (line 1) and written (line 2) once; `sectorsPerRequest` 4 when coalesced.
KernelTraffic stream(double elements, uint64_t sectorsPerRequest) {
  KernelTraffic t;
  t.kernel = "k";
  auto requests = static_cast<uint64_t>(elements / 32);
  for (bool store : {false, true}) {
    InstructionTraffic i;
    i.site = store ? "k.cu:2" : "k.cu:1";
    i.store = store;
    i.bytesPerLane = 4;
    i.requests = requests;
    i.sectors = requests * sectorsPerRequest;
    i.dramSectors = i.sectors;  // every sector read or written by one warp only
    i.laneBytes = requests * 128;
    t.instructions.push_back(i);
  }
  return t;
}

cuda::LaunchConfig grid(unsigned blocks, unsigned threads) {
  cuda::LaunchConfig c;
  c.grid[0] = blocks;
  c.block = threads;
  return c;
}

TEST(Predictor, ManyWarpsAreMemoryBound) {
  const DeviceSpec &d = h100();
  const double n = 64.0 * 4096 * 1024;
  KernelPrediction p = predictKernel(d, scalarKernel(100, 16, 32), grid(512, 128), stream(n, 4));
  EXPECT_STREQ(p.bound, "memory");
  EXPECT_DOUBLE_EQ(p.bytesMoved, 8 * n);
  EXPECT_DOUBLE_EQ(p.memorySeconds, 8 * n / d.copyBandwidth);
  EXPECT_DOUBLE_EQ(p.seconds, p.memorySeconds + d.launchOverhead);
  EXPECT_DOUBLE_EQ(p.sectorsPerRequest, 4);
  EXPECT_DOUBLE_EQ(p.sectorEfficiency, 1);
  // 4096 steps / 16 per iteration of 100 instructions; 4 blocks of 4 warps on the busiest SM.
  EXPECT_DOUBLE_EQ(p.instructionsPerWarp, 256 * 100);
  EXPECT_EQ(p.residentWarpsPerSm, 16u);
  EXPECT_DOUBLE_EQ(p.bytesInFlightPerSm, 16 * 32 * 64);
  EXPECT_DOUBLE_EQ(p.issueSeconds, 4 * 256 * 100 / d.clockHz);
  EXPECT_DOUBLE_EQ(p.instructionsPerByte, 100 / (32.0 * 128));
  EXPECT_NEAR(fractionOfCopy(d, 8 * n, p.seconds), p.memorySeconds / p.seconds, 1e-12);

  // A 32-byte stride: every lane its own sector, 8x the bytes moved, 8x the memory time.
  KernelPrediction strided = predictKernel(d, scalarKernel(100, 16, 32), grid(512, 128), stream(n, 32));
  EXPECT_DOUBLE_EQ(strided.memorySeconds, 8 * p.memorySeconds);
  EXPECT_DOUBLE_EQ(strided.sectorEfficiency, 0.125);
}

// The H200: the H100's SMs with more copy bandwidth. A memory-bound stream takes the bandwidths'
// ratio of the time; a latency-bound one (one warp per scheduler) takes the same time, a smaller
// fraction of the larger copy.
TEST(Predictor, TheH200MovesBytesFasterAtTheSameLatency) {
  const DeviceSpec &h = cuda::h200();
  EXPECT_EQ(h.arch, "sm_90");
  EXPECT_EQ(h.multiprocessors, h100().multiprocessors);
  EXPECT_EQ(&cuda::deviceSpecNamed("h200"), &h);
  EXPECT_EQ(&cuda::deviceSpecNamed("h100"), &h100());
  EXPECT_THROW(cuda::deviceSpecNamed("a100"), std::invalid_argument);
  const double n = 64.0 * 4096 * 1024;
  KernelPrediction on100 = predictKernel(h100(), scalarKernel(100, 16, 32), grid(512, 128), stream(n, 4));
  KernelPrediction on200 = predictKernel(h, scalarKernel(100, 16, 32), grid(512, 128), stream(n, 4));
  EXPECT_STREQ(on200.bound, "memory");
  EXPECT_DOUBLE_EQ(on200.memorySeconds / on100.memorySeconds, h100().copyBandwidth / h.copyBandwidth);
  KernelPrediction alone100 = predictKernel(h100(), scalarKernel(400, 16, 32), grid(132 * 4, 32), stream(132 * 4 * 32 * 4096.0, 4));
  KernelPrediction alone200 = predictKernel(h, scalarKernel(400, 16, 32), grid(132 * 4, 32), stream(132 * 4 * 32 * 4096.0, 4));
  EXPECT_STREQ(alone200.bound, "latency");
  EXPECT_DOUBLE_EQ(alone200.seconds, alone100.seconds);
}

TEST(Predictor, OneWarpPerSchedulerWaitsOnLatency) {
  const DeviceSpec &d = h100();
  const double n = 8.0 * 16384 * 1024;
  // 16 blocks of 128 threads: one block on each of 16 SMs, one warp per scheduler.
  KernelSass s = scalarKernel(1000, 8, 64);
  s.blocks[1].mix.mufu = 100;
  s.blocks[1].mix.control = 200;
  s.blocks[0].mix.instructions = 10;  // the entry: once per warp
  KernelPrediction p = predictKernel(d, s, grid(16, 128), stream(n / 64, 4));
  EXPECT_STREQ(p.bound, "latency");
  EXPECT_EQ(p.residentWarpsPerSm, 4u);
  double iterations = n / 64 / 32 / 8 / 64;  // requests per line / copies of it / warps
  EXPECT_DOUBLE_EQ(p.instructionsPerWarp, iterations * 1000 + 10);
  double chain = d.memoryLatency * d.clockHz + 700 * d.aluCycles + 100 * d.mufuCycles + 200 * d.controlCycles;
  EXPECT_DOUBLE_EQ(p.latencySeconds, (iterations * chain + 10 * d.aluCycles) / d.clockHz);
  EXPECT_LT(p.bytesInFlightPerSm, p.bytesInFlightNeeded);
}

// A chunked kernel (one with a chain of carries) pays each tile's fixed cost on its SM, as the
// planner does: 8192 blocks over 132 SMs.
TEST(Predictor, AChainedKernelPaysEachTile) {
  const DeviceSpec &d = h100();
  KernelSass s = scalarKernel(100, 16, 32);
  KernelPrediction plain = predictKernel(d, s, grid(8192, 128), stream(1 << 20, 4));
  KernelPrediction chained = predictKernel(d, s, grid(8192, 128), stream(1 << 20, 4), 4);
  EXPECT_EQ(plain.tileSeconds, 0.0);
  EXPECT_DOUBLE_EQ(chained.tileSeconds, 8192 * d.tileOverhead / d.multiprocessors);
  EXPECT_DOUBLE_EQ(chained.seconds, std::max({chained.memorySeconds, chained.issueSeconds, chained.latencySeconds,
                                              chained.chainSeconds}) +
                                        chained.tileSeconds + d.launchOverhead);
}

TEST(Predictor, ScalesTrafficAndSumsACall) {
  KernelTraffic t = scaleTraffic(stream(1024, 4), 2.5);
  EXPECT_EQ(t.instructions[0].requests, 80u);
  EXPECT_EQ(t.instructions[0].sectors, 320u);
  EXPECT_EQ(t.instructions[0].dramSectors, 320u);
  EXPECT_EQ(t.globalLaneBytes(), 2u * 80 * 128);
  KernelPrediction a, b;
  a.seconds = 1e-3;
  b.seconds = 2e-3;
  const DeviceSpec &d = h100();
  EXPECT_DOUBLE_EQ(callSeconds(d, {a, b}), 3e-3 + static_cast<double>(d.l2Bytes) / d.copyBandwidth);
  EXPECT_THROW(predictKernel(d, scalarKernel(10, 1, 255), grid(1, 1024), stream(1024, 4)), std::invalid_argument);
}

}  // namespace
}  // namespace scanforge::gpu
