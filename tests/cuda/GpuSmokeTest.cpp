// The CUDA driver path on a real GPU, without the compiler: NVRTC through the cache, module load,
// device memory, launches, and launch errors that name the CUDA error.
#include <gtest/gtest.h>

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaError.h"

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
