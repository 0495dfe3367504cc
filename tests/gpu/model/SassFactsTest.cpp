// SASS facts of kernels compiled by NVRTC for sm_90 and read with cuobjdump and nvdisasm: a float4
// copy loop is LDG.E.128/STG.E.128 with no spills, a template instance is found by its name, a
// dynamically indexed array lives in local memory, a register cap makes ptxas spill.
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/cuda/CudaError.h"
#include "tools/gpu/sass/SassFacts.h"

namespace scanforge::gpu {
namespace {

const char *kSource = R"(
extern "C" __global__ void copy4(const float4 *__restrict__ in, float4 *__restrict__ out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i];
}
template <int N>
__global__ void table(const float *in, float *out, int n) {
  float a[N] = {};
  for (int i = 0; i < N; ++i) a[(i * n + threadIdx.x) % N] += in[i * n + threadIdx.x];
  out[threadIdx.x] = a[n % N] + __expf(a[(n + 1) % N]);
}
)";

BinaryTools tools() {
  std::string why;
  return *BinaryTools::find(why);  // main() skipped without them
}

TEST(SassFacts, VectorCopyLoopAndLocalArray) {
  std::vector<KernelSass> facts = sassFacts(kSource, "facts.cu", "sm_90", {}, {"copy4", "table<64>"}, tools());
  ASSERT_EQ(facts.size(), 2u);
  const KernelSass &copy = facts[0];
  EXPECT_EQ(copy.symbol, "copy4");
  EXPECT_GT(copy.registers, 0u);
  EXPECT_EQ(copy.spillStoreBytes + copy.spillLoadBytes + copy.stackBytes, 0u);
  ASSERT_TRUE(copy.loop);
  EXPECT_EQ(copy.loop->loadWidths, (std::map<unsigned, unsigned>{{16, 1}}));
  EXPECT_EQ(copy.loop->storeWidths, (std::map<unsigned, unsigned>{{16, 1}}));
  EXPECT_EQ(copy.loop->globalBytes(), 32u);
  EXPECT_GT(copy.loopInstructionsPerByte(), 0);
  EXPECT_LT(copy.loop->instructions, copy.all.instructions);

  const KernelSass &table = facts[1];
  EXPECT_EQ(table.kernel, "table<64>");
  EXPECT_EQ(table.symbol, "_Z5tableILi64EEvPKfPfi");
  EXPECT_GE(table.stackBytes, 256u);  // a[64] indexed at run time: 256 bytes of local memory
  EXPECT_GT(table.all.localAccesses, 0u);
  EXPECT_GE(table.all.mufu, 1u);
}

// A step loop unrolled by 8 that loads each input 8 steps ahead (a ring) waits for a load at every
// step: its loads share a scoreboard, and waiting on it waits for the load issued a step before.
// The same loop loading 8 steps back to back before using them waits once per 8 steps.
TEST(SassFacts, LoadsAheadOnOneScoreboardWaitEveryStep) {
  const char *steps = R"(
extern "C" __global__ void ring(const float *__restrict__ in, float *__restrict__ out, int T, int n) {
  const int d = blockIdx.x * blockDim.x + threadIdx.x;
  float pf[8], s = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) pf[j] = in[(long long)min(j, T - 1) * n + d];
  for (int t0 = 0; t0 < T; t0 += 8) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int t = t0 + j;
      if (t < T) {
        const float x = pf[j];
        if (t + 8 < T) pf[j] = in[(long long)(t + 8) * n + d];
        s = s * 0.5f + x;
        out[(long long)t * n + d] = s;
      }
    }
  }
}
extern "C" __global__ void batch(const float *__restrict__ in, float *__restrict__ out, int T, int n) {
  const int d = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f;
  for (int t0 = 0; t0 < T; t0 += 8) {
    float x[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = in[(long long)min(t0 + j, T - 1) * n + d];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int t = t0 + j;
      if (t < T) {
        s = s * 0.5f + x[j];
        out[(long long)t * n + d] = s;
      }
    }
  }
}
)";
  std::vector<KernelSass> facts = sassFacts(steps, "steps.cu", "sm_90", {}, {"ring", "batch"}, tools());
  ASSERT_TRUE(facts[0].loop && facts[1].loop);
  EXPECT_EQ(facts[0].loop->loadWaits, 8u);
  EXPECT_EQ(facts[1].loop->loadWaits, 1u);

  // Line information: `batch`'s loads and stores sit in its loop's blocks under their source lines.
  auto lineOf = [&](const char *text) {
    std::string source = steps, head = source.substr(0, source.find(text, source.find("void batch")));
    return "steps.cu:" + std::to_string(1 + std::count(head.begin(), head.end(), '\n'));
  };
  std::map<MemorySite, unsigned> inLoops;
  for (const BlockFacts &b : facts[1].blocks)
    if (b.loop >= 0)
      for (auto &[site, n] : b.sites) inLoops[site] += n;
  EXPECT_EQ(inLoops[(MemorySite{lineOf("x[j] = in["), false, false})], 8u);
  EXPECT_EQ(inLoops[(MemorySite{lineOf("out[(long long)t"), true, false})], 8u);
}

TEST(SassFacts, RegisterCapSpills) {
  const char *pressure = R"(
extern "C" __global__ void pressure(const float *in, float *out, int n) {
  float a[48];
#pragma unroll
  for (int i = 0; i < 48; ++i) a[i] = in[i * n + threadIdx.x];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 48; ++i) s += a[i] * a[47 - i] / (a[(i + 5) % 48] + 1.0f);
  out[threadIdx.x] = s;
}
)";
  std::vector<KernelSass> facts = sassFacts(pressure, "pressure.cu", "sm_90", {"--maxrregcount=24"}, {"pressure"}, tools());
  EXPECT_LE(facts[0].registers, 24u);
  EXPECT_GT(facts[0].spillStoreBytes, 0u);
  EXPECT_GT(facts[0].spillLoadBytes, 0u);
}

TEST(SassFacts, ErrorsNameTheFileAndKernel) {
  try {
    sassFacts(kSource, "facts.cu", "sm_90", {}, {"nosuch<1>"}, tools());
    FAIL() << "an unknown kernel was accepted";
  } catch (const cuda::CudaError &e) {
    EXPECT_NE(std::string(e.what()).find("facts.cu"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nosuch<1>"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace scanforge::gpu
