// The traffic record: 32-byte sectors per warp request for coalesced, strided, vector and
// partial-warp accesses, bytes moved, and shared-memory bank conflicts, all known by hand.
#include "tests/gpu/emulator/Kernels.h"

namespace scanforge::test {
namespace {

const gpu::InstructionTraffic &at(const gpu::KernelTraffic &k, const std::string &site, bool store) {
  for (const gpu::InstructionTraffic &i : k.instructions)
    if (i.site == site && i.store == store) return i;
  throw std::runtime_error("no " + std::string(store ? "store" : "load") + " at " + site);
}

TEST(Traffic, CoalescedStridedAndVectorAccesses) {
  KernelRun run(R"(
extern "C" __global__ void patterns(const float *in, float *out, const float4 *in4, float4 *out4, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = in[i];
  out[n + i] = in[8 * i];
  out4[i] = in4[i];
}
)",
                "patterns", 5);
  const int n = 1000;  // 32 requests per instruction: 31 full warps and one of 8 lanes
  run.buffer(std::vector<float>(8 * n, 1.0f));
  run.buffer(std::vector<float>(2 * n, 0.0f));
  run.buffer(std::vector<float>(4 * n, 1.0f));
  run.buffer(std::vector<float>(4 * n, 0.0f));
  ASSERT_EQ(run.launch(8, 128, {n}), "");
  std::vector<gpu::KernelTraffic> traffic = run.device.traffic();
  ASSERT_EQ(traffic.size(), 1u);
  const gpu::KernelTraffic &k = traffic[0];
  EXPECT_EQ(k.launches, 1u);
  EXPECT_EQ(k.blocks, 8u);
  EXPECT_EQ(k.threads, 1024u);

  const gpu::InstructionTraffic &coalesced = at(k, "test.cu:5", false);
  EXPECT_EQ(coalesced.requests, 32u);
  EXPECT_EQ(coalesced.sectors, 31u * 4 + 1);  // the last warp's 8 lanes: 32 bytes
  EXPECT_EQ(coalesced.laneBytes, 4u * n);
  EXPECT_EQ(coalesced.bytesPerLane, 4u);
  EXPECT_EQ(at(k, "test.cu:5", true).sectors, 31u * 4 + 1);

  const gpu::InstructionTraffic &strided = at(k, "test.cu:6", false);
  EXPECT_EQ(strided.requests, 32u);
  EXPECT_EQ(strided.sectors, 31u * 32 + 8);  // every lane its own sector

  const gpu::InstructionTraffic &vector = at(k, "test.cu:7", false);
  EXPECT_EQ(vector.bytesPerLane, 16u);
  EXPECT_EQ(vector.sectors, 31u * 16 + 4);
  EXPECT_EQ(vector.laneBytes, 16u * n);

  uint64_t lanes = 4 * n + 4 * n + 4 * n + 4 * n + 16 * n + 16 * n;
  EXPECT_EQ(k.globalLaneBytes(), lanes);
  EXPECT_EQ(k.globalSectors(), 125u * 2 + (31 * 32 + 8) + 125 + 500 * 2);
  EXPECT_NEAR(k.sectorEfficiency(), static_cast<double>(lanes) / (32.0 * static_cast<double>(k.globalSectors())), 1e-12);
  // DRAM: the strided load's sectors below 125 are also the coalesced load's. Sector s is read by
  // warp s / 4 there and warp s / 32 here: the same warp for s < 4 (moved twice), different warps
  // for the other 121 (the second read is a cache hit), whatever order the warps ran in.
  EXPECT_EQ(k.bytesMoved(), 32u * (125 * 2 + (31 * 32 + 8) + 125 + 500 * 2 - 121));

  run.device.clearTraffic();
  EXPECT_TRUE(run.device.traffic().empty());
}

TEST(Traffic, SharedMemoryBankConflicts) {
  KernelRun run(R"(
extern "C" __global__ void banks(float *out, int stride) {
  extern __shared__ float tile[];
  tile[threadIdx.x * stride] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x * stride];
}
)",
                "banks", 2);
  run.buffer(std::vector<float>(64, 0.0f));
  ASSERT_EQ(run.launch(1, 64, {1}, 64 * 32 * sizeof(float)), "");
  const gpu::KernelTraffic unit = run.device.traffic()[0];
  EXPECT_EQ(at(unit, "test.cu:4", true).requests, 2u);
  EXPECT_EQ(at(unit, "test.cu:4", true).wavefronts, 2u);
  EXPECT_DOUBLE_EQ(unit.sharedWavefrontsPerRequest(), 1.0);
  run.device.clearTraffic();
  ASSERT_EQ(run.launch(1, 64, {32}, 64 * 32 * sizeof(float)), "");
  const gpu::KernelTraffic conflicted = run.device.traffic()[0];
  EXPECT_EQ(at(conflicted, "test.cu:6", false).wavefronts, 64u);  // 32-way, two warps
  EXPECT_DOUBLE_EQ(conflicted.sharedWavefrontsPerRequest(), 32.0);
}

}  // namespace
}  // namespace scanforge::test
