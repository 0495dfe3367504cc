// DeviceBackend on a GPU: the CUDA driver's primary context, NVRTC-compiled cubins through the
// kernel cache.
#pragma once

#include <memory>

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/DeviceBackend.h"
#include "runtime/cuda/KernelCache.h"

namespace scanforge::cuda {

class CudaBackend : public DeviceBackend {
 public:
  // Opens GPU `ordinal`. Throws CudaUnavailable when there is no driver, no device or no NVRTC.
  explicit CudaBackend(int ordinal = 0,
                       std::shared_ptr<KernelCache> cache = std::make_shared<KernelCache>(KernelCache::defaultDirectory()));
  ~CudaBackend() override;

  const std::string &arch() const { return arch_; }  // "sm_90"
  // A non-blocking stream for launches and copies that may overlap others; destroy it when done.
  Stream createStream();
  void destroyStream(Stream stream) noexcept;
  KernelCache &cache() { return *cache_; }

  std::string describe() const override;
  int multiprocessors() const override { return multiprocessors_; }
  size_t sharedBytesPerBlock() const override { return sharedPerBlock_; }
  DevicePtr allocate(size_t bytes) override;
  void release(DevicePtr ptr) noexcept override;
  void zero(DevicePtr ptr, size_t bytes, Stream stream) override;
  void upload(DevicePtr dst, const void *src, size_t bytes) override;
  void download(void *dst, DevicePtr src, size_t bytes) override;
  void synchronize(Stream stream) override;
  std::unique_ptr<LoadedModule> load(const ModuleSource &module) override;

 private:
  void makeCurrent() const;

  const CudaDriver &driver_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string name_, arch_;
  int multiprocessors_ = 0;
  size_t sharedPerBlock_ = 0;
  std::shared_ptr<KernelCache> cache_;
};

}  // namespace scanforge::cuda
