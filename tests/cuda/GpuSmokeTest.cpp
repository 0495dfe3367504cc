// The CUDA driver path on a real GPU, without the compiler: NVRTC through the cache, module load,
// device memory, launches, and launch errors that name the CUDA error.
#include <gtest/gtest.h>

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Planner.h"

namespace scanforge::cuda {
namespace {

const char *kScale = R"(
extern "C" __global__ void scale(float *x, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}
)";

TEST(GpuSmoke, CompilesLoadsLaunchesAndCaches) {
  CudaBackend gpu(0, std::make_shared<KernelCache>(""));
  ModuleSource source{"scale.cu", kScale, {}, {{"scale", 3}}};
  std::unique_ptr<LoadedModule> module = gpu.load(source);
  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  DeviceBuffer x(gpu, host.size() * sizeof(float));
  gpu.upload(x.get(), host.data(), host.size() * sizeof(float));
  DevicePtr ptr = x.get();
  float factor = 2.5f;
  int n = static_cast<int>(host.size());
  void *args[] = {&ptr, &factor, &n};
  LaunchConfig config;
  config.grid[0] = 4;
  config.block = 256;
  module->launch("scale", config, args, 0);
  gpu.synchronize(0);
  std::vector<float> back(host.size());
  gpu.download(back.data(), x.get(), back.size() * sizeof(float));
  for (size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], 2.5f * static_cast<float>(i)) << i;
  gpu.load(source);
  EXPECT_EQ(gpu.cache().stats().compiles, 1);
  EXPECT_EQ(gpu.cache().stats().memoryHits, 1);
}

TEST(GpuSmoke, LaunchesOnAStream) {
  CudaBackend gpu;
  std::unique_ptr<LoadedModule> module = gpu.load({"scale.cu", kScale, {}, {{"scale", 3}}});
  std::vector<float> host(64, 3.0f);
  DeviceBuffer x(gpu, host.size() * sizeof(float));
  gpu.upload(x.get(), host.data(), host.size() * sizeof(float));
  Stream stream = gpu.createStream();
  DevicePtr ptr = x.get();
  float factor = -1.0f;
  int n = 64;
  void *args[] = {&ptr, &factor, &n};
  LaunchConfig config;
  config.block = 64;
  module->launch("scale", config, args, stream);
  gpu.synchronize(stream);
  gpu.destroyStream(stream);
  gpu.download(host.data(), x.get(), host.size() * sizeof(float));
  for (float v : host) ASSERT_EQ(v, -3.0f);
}

// A chunked kernel's shape: a 4-byte block ticket in static shared memory beside a 48 KiB dynamic
// buffer. The driver's default limit counts both against 48 KiB, so this launch failed with
// CUDA_ERROR_INVALID_VALUE (the selective SSM's backward on an H200) until the launcher raised the
// kernel's dynamic limit to what the launch asks for.
const char *kTicketAndBuffer = R"(
extern "C" __global__ void ticket_and_buffer(float *out, int n) {
  __shared__ int ticket;
  extern __shared__ float buffer[];
  if (threadIdx.x == 0) ticket = blockIdx.x;
  for (int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = 1.0f + (float)(i & 1);
  __syncthreads();
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += buffer[i];
  if (threadIdx.x == 0) out[blockIdx.x] = sum + (float)ticket;
}
)";

// The planner bounds a block's dynamic shared memory by sharedBytesPerBlock() less the static
// reserve: the device's opt-in maximum (227 KiB on an H100), which the launcher must then allow.
// It read the 48 KiB default until 2026-11-27, and the stash plans got chunks of 9 to 15 steps.
TEST(GpuSmoke, FullDynamicSharedMemoryBesideStaticSharedMemory) {
  CudaBackend gpu;
  std::unique_ptr<LoadedModule> module = gpu.load({"ticket.cu", kTicketAndBuffer, {}, {{"ticket_and_buffer", 2}}});
  if (std::stoi(gpu.arch().substr(3)) >= 70) {
    EXPECT_GT(gpu.sharedBytesPerBlock(), 48u * 1024) << gpu.describe() << ": not the opt-in maximum";
  }
  const int n = static_cast<int>((gpu.sharedBytesPerBlock() - kStaticSharedReserve) / 4), blocks = 3;
  DeviceBuffer out(gpu, blocks * sizeof(float));
  DevicePtr ptr = out.get();
  int count = n;
  void *args[] = {&ptr, &count};
  LaunchConfig config;
  config.grid[0] = blocks;
  config.block = 128;
  config.sharedBytes = static_cast<unsigned>(n) * 4;
  module->launch("ticket_and_buffer", config, args, 0);
  gpu.synchronize(0);
  std::vector<float> back(blocks);
  gpu.download(back.data(), out.get(), blocks * sizeof(float));
  const float sum = 1.5f * n;  // every partial sum is an integer below 2^24: exact
  for (int b = 0; b < blocks; ++b) EXPECT_EQ(back[b], sum + static_cast<float>(b)) << "block " << b;
}

TEST(GpuSmoke, LaunchErrorsCarryTheCudaError) {
  CudaBackend gpu;
  std::unique_ptr<LoadedModule> module = gpu.load({"scale.cu", kScale, {}, {{"scale", 3}}});
  DevicePtr ptr = 0;
  float factor = 1;
  int n = 0;
  void *args[] = {&ptr, &factor, &n};
  LaunchConfig config;
  config.block = 4096;  // more threads than a block may have
  try {
    module->launch("scale", config, args, 0);
    FAIL() << "an impossible launch succeeded";
  } catch (const CudaError &e) {
    EXPECT_NE(std::string(e.what()).find("cuLaunchKernel: CUDA_ERROR_INVALID_VALUE"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace scanforge::cuda
