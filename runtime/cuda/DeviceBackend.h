// Where kernels run: a GPU through the CUDA driver (CudaBackend), or the CPU emulation the tests
// use to check generated kernels on machines without a GPU. Device memory is addressed by 64-bit
// handles (CUdeviceptr on a GPU).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace scanforge::cuda {

using DevicePtr = uint64_t;
using Stream = uint64_t;  // 0: the default stream

struct ModuleSource {
  std::string name;                       // file name, e.g. "mingru.cu"
  std::string source;
  std::vector<std::string> options;       // compiler options, e.g. "-DSF_DIM_n=16"
  std::map<std::string, size_t> kernels;  // kernel name -> number of parameters
};

struct LaunchConfig {
  unsigned grid[3] = {1, 1, 1};
  unsigned block = 1;
  size_t sharedBytes = 0;
};

class LoadedModule {
 public:
  virtual ~LoadedModule() = default;
  // `args` holds one pointer per kernel parameter, to its value (as cuLaunchKernel takes them).
  virtual void launch(const std::string &kernel, const LaunchConfig &config, void **args, Stream stream) = 0;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual std::string describe() const = 0;
  virtual int multiprocessors() const = 0;
  virtual size_t sharedBytesPerBlock() const = 0;
  // The largest grid extent in y and z (CUDA's 65535 on every GPU): a launch covers at most this many
  // batch elements (the runner launches a larger batch in slices) and chunks.
  virtual int64_t maxGridYZ() const { return 65535; }

  virtual DevicePtr allocate(size_t bytes) = 0;
  virtual void release(DevicePtr ptr) noexcept = 0;
  virtual void zero(DevicePtr ptr, size_t bytes, Stream stream) = 0;
  virtual void upload(DevicePtr dst, const void *src, size_t bytes) = 0;
  virtual void download(void *dst, DevicePtr src, size_t bytes) = 0;
  virtual void synchronize(Stream stream) = 0;

  virtual std::unique_ptr<LoadedModule> load(const ModuleSource &module) = 0;
};

// Device memory that is released with its owner.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBackend &device, size_t bytes) : device_(&device), ptr_(device.allocate(bytes)), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    std::swap(device_, other.device_);
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (device_ && ptr_) device_->release(ptr_);
  }

  DevicePtr get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  DeviceBackend *device_ = nullptr;
  DevicePtr ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace scanforge::cuda
