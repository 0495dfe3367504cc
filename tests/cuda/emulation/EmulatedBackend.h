// A DeviceBackend that runs generated CUDA kernels on the CPU, so their logic can be checked
// against the float64 reference on machines without a GPU.
//
// A module is compiled with the host C++ compiler into a shared library, with CudaEmulation.h in
// front and one entry point per kernel (cached by content hash, so reruns do not recompile). A
// launch runs the blocks one after another and the 32 lanes of each warp concurrently on a pool of
// host threads, so that warp shuffles exchange values as on a GPU; lanes that disagree on the
// number of shuffles (divergence) fail the launch. The kernels use no __syncthreads. Device
// memory is host memory, so AddressSanitizer sees every out-of-bounds access of a kernel.
#pragma once

#include <filesystem>

#include "runtime/cuda/DeviceBackend.h"

namespace scanforge::test {

class EmulatedBackend : public cuda::DeviceBackend {
 public:
  // `cacheDir` keeps compiled libraries; `compiler` and `flags` build them.
  EmulatedBackend(std::filesystem::path cacheDir, std::string compiler, std::string flags);
  ~EmulatedBackend() override;

  std::string describe() const override { return "CPU emulation"; }
  int multiprocessors() const override { return 132; }  // plans as for an H100
  size_t sharedBytesPerBlock() const override { return 48 * 1024; }
  cuda::DevicePtr allocate(size_t bytes) override;
  void release(cuda::DevicePtr ptr) noexcept override;
  void zero(cuda::DevicePtr ptr, size_t bytes, cuda::Stream stream) override;
  void upload(cuda::DevicePtr dst, const void *src, size_t bytes) override;
  void download(void *dst, cuda::DevicePtr src, size_t bytes) override;
  void synchronize(cuda::Stream) override {}
  std::unique_ptr<cuda::LoadedModule> load(const cuda::ModuleSource &module) override;

 private:
  void checkRange(cuda::DevicePtr ptr, size_t bytes, const char *what) const;

  std::filesystem::path cacheDir_;
  std::string compiler_, flags_;
  std::map<cuda::DevicePtr, std::unique_ptr<std::byte[]>> memory_;
  std::map<cuda::DevicePtr, size_t> sizes_;
};

}  // namespace scanforge::test
