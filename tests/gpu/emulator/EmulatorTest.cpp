// The concurrent emulator catches the bugs it claims to (each with kernel, block, thread and
// line), and runs correct kernels clean: a missing __syncthreads, a shared-memory race, a race
// between blocks from a thread-index mix-up, a look-back that waits on a later block without a
// dynamic block index (deadlock), a look-back without a fence (race), out-of-bounds shared and
// global accesses, a spin that nobody ends, a shuffle mask that excludes its caller.
#include <cmath>
#include <numeric>
#include <random>

#include "tests/gpu/emulator/Kernels.h"

namespace scanforge::test {
namespace {

using ::testing::HasSubstr;

std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v) x = dist(rng);
  return v;
}

const char *kReverse = R"(
extern "C" __global__ void reverse(const float *in, float *out, int n, int sync) {
  extern __shared__ float tile[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.0f;
  if (sync) __syncthreads();
  int j = blockDim.x - 1 - threadIdx.x;
  if (i < n) out[i] = tile[j];
}
)";

TEST(Emulator, ReversesBlocksThroughSharedMemoryWithABarrier) {
  const int n = 300, block = 128;  // three blocks, the last one partial
  KernelRun run(kReverse, "reverse", 4);
  std::vector<float> in = randomFloats(n, 1);
  run.buffer(in);
  run.buffer(std::vector<float>(n, 0.0f));
  ASSERT_EQ(run.launch(3, block, {n, 1}, block * sizeof(float)), "");
  std::vector<float> out = run.read<float>(1, n);
  for (int i = 0; i < n; ++i) {
    int base = i / block * block, j = base + block - 1 - (i - base);
    EXPECT_EQ(out[i], j < n ? in[j] : 0.0f) << "element " << i;
  }
}

TEST(Emulator, MissingSyncthreadsIsASharedMemoryRace) {
  KernelRun run(kReverse, "reverse", 4);
  run.buffer(randomFloats(256, 2));
  run.buffer(std::vector<float>(256, 0.0f));
  std::string error = run.launch(2, 128, {256, 0}, 128 * sizeof(float));
  EXPECT_THAT(error, HasSubstr("reverse: "));
  EXPECT_THAT(error, HasSubstr("data race on shared memory"));
  EXPECT_THAT(error, HasSubstr("wrote it at test.cu:5"));
  EXPECT_THAT(error, HasSubstr("read it at test.cu:8"));
}

TEST(Emulator, TwoThreadsWritingOneSharedWordRace) {
  KernelRun run(R"(
extern "C" __global__ void last_writer(float *out) {
  __shared__ float winner;
  winner = threadIdx.x;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = winner;
}
)",
                "last_writer", 1);
  run.buffer(std::vector<float>(64, 0.0f));
  std::string error = run.launch(1, 64);
  EXPECT_THAT(error, HasSubstr("data race on shared memory"));
  EXPECT_THAT(error, HasSubstr("wrote it at test.cu:4, then block (0, 0, 0) thread"));
}

TEST(Emulator, ThreadIndexWithoutBlockOffsetIsARaceBetweenBlocks) {
  const char *source = R"(
extern "C" __global__ void scale(const float *in, float *out, int n, int withOffset) {
  int i = withOffset ? blockIdx.x * blockDim.x + threadIdx.x : threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}
)";
  KernelRun run(source, "scale", 4);
  std::vector<float> in = randomFloats(384, 3);
  run.buffer(in);
  run.buffer(std::vector<float>(384, 0.0f));
  std::string error = run.launch(3, 128, {384, 0});
  EXPECT_THAT(error, HasSubstr("data race on global memory"));
  EXPECT_THAT(error, HasSubstr("wrote it at test.cu:4"));
  EXPECT_EQ(run.launch(3, 128, {384, 1}), "");
  std::vector<float> out = run.read<float>(1, 384);
  for (int i = 0; i < 384; ++i) EXPECT_EQ(out[i], 2.0f * in[i]);
}

// Block `position` adds its sum to the running total of the blocks before it, waiting for their
// flag: the chained carry of a single-pass scan (decoupled look-back reduced to one predecessor).
const char *kChain = R"(
extern "C" __global__ void chained_sum(const float *in, float *out, float *aggregate, int *flag, int *ticket, int dynamic, int fence) {
  __shared__ int position;
  if (threadIdx.x == 0) position = dynamic ? atomicAdd(ticket, 1) : blockIdx.x;
  __syncthreads();
  int b = position;
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int k = 0; k < blockDim.x; ++k) s += in[b * blockDim.x + k];
    float carry = 0.0f;
    if (b > 0) {
      while (((volatile int *)flag)[b - 1] == 0) {
      }
      carry = aggregate[b - 1];
    }
    aggregate[b] = carry + s;
    if (fence) __threadfence();
    ((volatile int *)flag)[b] = 1;
    out[b] = carry + s;
  }
}
)";

struct Chain {
  KernelRun run;
  std::vector<float> in;
  static constexpr int kBlocks = 16, kBlock = 64;
  Chain(uint64_t seed, unsigned resident) : run(kChain, "chained_sum", 7, emulatorOptions(seed, resident)) {
    in = randomFloats(kBlocks * kBlock, 4);
    run.buffer(in);
    run.buffer(std::vector<float>(kBlocks, 0.0f));
    run.buffer(std::vector<float>(kBlocks, 0.0f));
    run.buffer(std::vector<int>(kBlocks, 0));
    run.buffer(std::vector<int>(1, 0));
  }
};

TEST(Emulator, LookBackOnBlockIdxDeadlocksWhenTheBlockWaitedForIsNotResident) {
  for (uint64_t seed : {1, 2, 3}) {
    Chain chain(seed, /*resident=*/3);
    std::string error = chain.run.launch(Chain::kBlocks, Chain::kBlock, {0, 1});
    EXPECT_THAT(error, HasSubstr("chained_sum: deadlock: the running threads spin")) << "seed " << seed;
    EXPECT_THAT(error, HasSubstr("spin at test.cu:12")) << "seed " << seed;
    EXPECT_THAT(error, HasSubstr("block(s) not started")) << "seed " << seed;
  }
}

TEST(Emulator, LookBackWithADynamicBlockIndexAndAFenceRunsClean) {
  for (uint64_t seed : {1, 2, 3}) {
    Chain chain(seed, /*resident=*/3);
    ASSERT_EQ(chain.run.launch(Chain::kBlocks, Chain::kBlock, {1, 1}), "") << "seed " << seed;
    std::vector<float> out = chain.run.read<float>(1, Chain::kBlocks);
    float total = 0.0f;
    for (int b = 0; b < Chain::kBlocks; ++b) {
      float s = 0.0f;
      for (int k = 0; k < Chain::kBlock; ++k) s += chain.in[b * Chain::kBlock + k];
      total = total + s;
      EXPECT_EQ(out[b], total) << "block " << b;
    }
  }
}

TEST(Emulator, LookBackWithoutAFenceIsARace) {
  Chain chain(1, /*resident=*/3);
  std::string error = chain.run.launch(Chain::kBlocks, Chain::kBlock, {1, 0});
  EXPECT_THAT(error, HasSubstr("data race on global memory"));
  EXPECT_THAT(error, HasSubstr("wrote it at test.cu:16"));
  EXPECT_THAT(error, HasSubstr("read it at test.cu:14"));
}

TEST(Emulator, SharedMemoryIsBoundsCheckedAndStartsAsNaN) {
  const char *source = R"(
extern "C" __global__ void shared_edges(float *out, int overrun) {
  extern __shared__ float tile[];
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[threadIdx.x];
  __syncthreads();
  tile[threadIdx.x + overrun] = 1.0f;
}
)";
  KernelRun run(source, "shared_edges", 2);
  run.buffer(std::vector<float>(256, 0.0f));
  ASSERT_EQ(run.launch(2, 128, {0}, 128 * sizeof(float)), "");
  for (float v : run.read<float>(0, 256)) EXPECT_TRUE(std::isnan(v)) << v;
  std::string error = run.launch(2, 128, {1}, 128 * sizeof(float));
  EXPECT_THAT(error, HasSubstr("thread 127 writes 4 bytes of shared memory at offset 512 at test.cu:6, outside the "
                               "block's 512 bytes"));
}

TEST(Emulator, GlobalAccessesPastAnAllocationAreCaught) {
  KernelRun run(R"(
extern "C" __global__ void fill(float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) out[i] = 1.0f;
}
)",
                "fill", 2);
  run.buffer(std::vector<float>(100, 0.0f));
  std::string error = run.launch(1, 128, {100});
  EXPECT_THAT(error, HasSubstr("thread 100 writes 4 bytes at 0x"));
  EXPECT_THAT(error, HasSubstr("0 bytes past the end of a 400-byte allocation at test.cu:4"));
}

TEST(Emulator, ASpinThatNoResidentThreadEndsIsADeadlock) {
  KernelRun run(R"(
extern "C" __global__ void stuck(int *flag) {
  if (threadIdx.x == 0)
    while (((volatile int *)flag)[0] == 0) {
    }
  __syncthreads();
  if (threadIdx.x == 1) ((volatile int *)flag)[0] = 1;
}
)",
                "stuck", 1);
  run.buffer(std::vector<int>(1, 0));
  std::string error = run.launch(1, 64);
  EXPECT_THAT(error, HasSubstr("stuck: deadlock"));
  EXPECT_THAT(error, HasSubstr("63 thread(s) wait at __syncthreads at test.cu:6"));
  EXPECT_THAT(error, HasSubstr("1 thread(s) spin at test.cu:4"));
}

TEST(Emulator, ShuffleMasksAreCheckedAgainstTheLanesThatCall) {
  const char *source = R"(
extern "C" __global__ void partial(float *out, int mask) {
  float v = threadIdx.x;
  if (threadIdx.x < 16) v += __shfl_xor_sync((unsigned)mask, v, 1);
  out[threadIdx.x] = v;
}
)";
  KernelRun run(source, "partial", 2);
  run.buffer(std::vector<float>(32, 0.0f));
  ASSERT_EQ(run.launch(1, 32, {0xffff}), "");
  std::vector<float> out = run.read<float>(0, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], i < 16 ? static_cast<float>(i + (i ^ 1)) : static_cast<float>(i));
  EXPECT_THAT(run.launch(1, 32, {0xff}), HasSubstr("with mask 0xff, which excludes its own lane"));
  EXPECT_THAT(run.launch(1, 32, {static_cast<int>(0xffffffffu)}), HasSubstr("(divergence)"));
}

// Blocks start in a seeded random order (the same for the same seed).
TEST(Emulator, BlockOrderFollowsTheSeed) {
  const char *source = R"(
extern "C" __global__ void arrival(int *order, int *ticket) {
  if (threadIdx.x == 0) order[atomicAdd(ticket, 1)] = blockIdx.x;
}
)";
  auto orderFor = [&](uint64_t seed) {
    KernelRun run(source, "arrival", 2, emulatorOptions(seed, 2));
    run.buffer(std::vector<int>(16, -1));
    run.buffer(std::vector<int>(1, 0));
    EXPECT_EQ(run.launch(16, 32), "");
    return run.read<int>(0, 16);
  };
  std::vector<int> a = orderFor(1), b = orderFor(2), again = orderFor(1);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> all(16);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
  EXPECT_EQ(a, again);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace scanforge::test
