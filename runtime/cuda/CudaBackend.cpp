#include "runtime/cuda/CudaBackend.h"

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Nvrtc.h"

namespace scanforge::cuda {

namespace {

class CudaModule : public LoadedModule {
 public:
  CudaModule(const CudaDriver &driver, CUmodule module, std::string name)
      : driver_(driver), module_(module), name_(std::move(name)) {}
  ~CudaModule() override { driver_.cuModuleUnload(module_); }

  void launch(const std::string &kernel, const LaunchConfig &c, void **args, Stream stream) override {
    auto it = functions_.find(kernel);
    if (it == functions_.end()) {
      CUfunction f = nullptr;
      driver_.check(driver_.cuModuleGetFunction(&f, module_, kernel.c_str()), "finding kernel '" + kernel + "' in " + name_);
      it = functions_.emplace(kernel, Function{f, 0}).first;
    }
    // By default dynamic and static shared memory together may not pass 48 KiB: a chunked kernel's
    // 4-byte block ticket beside a 48 KiB recompute buffer failed to launch (measured on an H200).
    // Raising the function's dynamic limit to what this launch asks for lifts that (up to the
    // device's opt-in maximum, which the planner's stash plans use).
    if (c.sharedBytes > it->second.dynamicSharedAllowed) {
      driver_.check(driver_.cuFuncSetAttribute(it->second.function, kFuncAttrMaxDynamicShared, static_cast<int>(c.sharedBytes)),
                    "allowing " + std::to_string(c.sharedBytes) + " bytes of dynamic shared memory to '" + kernel + "'");
      it->second.dynamicSharedAllowed = c.sharedBytes;
    }
    driver_.check(driver_.cuLaunchKernel(it->second.function, c.grid[0], c.grid[1], c.grid[2], c.block, 1, 1,
                                         static_cast<unsigned>(c.sharedBytes), reinterpret_cast<CUstream>(stream), args,
                                         nullptr),
                  "cuLaunchKernel");
  }

 private:
  const CudaDriver &driver_;
  CUmodule module_;
  std::string name_;
  struct Function {
    CUfunction function;
    size_t dynamicSharedAllowed;  // raised by this module so far (0: the driver's default)
  };
  std::map<std::string, Function> functions_;
};

}  // namespace

CudaBackend::CudaBackend(int ordinal, std::shared_ptr<KernelCache> cache)
    : driver_(CudaDriver::get()), cache_(std::move(cache)) {
  Nvrtc::get();  // a GPU without a compiler cannot run generated kernels: fail now
  std::string which = "CUDA device " + std::to_string(ordinal);
  driver_.check(driver_.cuDeviceGet(&device_, ordinal), "opening " + which);
  char name[256] = {};
  driver_.check(driver_.cuDeviceGetName(name, sizeof name, device_), "naming " + which);
  name_ = name;
  int major = 0, minor = 0, sms = 0, shared = 0;
  driver_.check(driver_.cuDeviceGetAttribute(&major, kAttrComputeMajor, device_), "querying " + which);
  driver_.check(driver_.cuDeviceGetAttribute(&minor, kAttrComputeMinor, device_), "querying " + which);
  driver_.check(driver_.cuDeviceGetAttribute(&sms, kAttrMultiprocessors, device_), "querying " + which);
  driver_.check(driver_.cuDeviceGetAttribute(&shared, kAttrMaxSharedPerBlockOptin, device_), "querying " + which);
  arch_ = "sm_" + std::to_string(major) + std::to_string(minor);
  multiprocessors_ = sms;
  sharedPerBlock_ = static_cast<size_t>(shared);
  driver_.check(driver_.cuDevicePrimaryCtxRetain(&context_, device_), "creating a context on " + which);
  makeCurrent();
}

CudaBackend::~CudaBackend() { driver_.cuDevicePrimaryCtxRelease(device_); }

void CudaBackend::makeCurrent() const { driver_.check(driver_.cuCtxSetCurrent(context_), "activating " + name_); }

std::string CudaBackend::describe() const { return name_ + " (" + arch_ + ", " + std::to_string(multiprocessors_) + " SMs)"; }

DevicePtr CudaBackend::allocate(size_t bytes) {
  makeCurrent();
  CUdeviceptr ptr = 0;
  driver_.check(driver_.cuMemAlloc(&ptr, bytes == 0 ? 1 : bytes), "allocating " + std::to_string(bytes) + " bytes on " + name_);
  return ptr;
}

void CudaBackend::release(DevicePtr ptr) noexcept {
  if (driver_.cuCtxSetCurrent(context_) == kCudaSuccess) driver_.cuMemFree(ptr);
}

void CudaBackend::zero(DevicePtr ptr, size_t bytes, Stream stream) {
  makeCurrent();
  driver_.check(driver_.cuMemsetD8Async(ptr, 0, bytes, reinterpret_cast<CUstream>(stream)), "zeroing device memory");
}

void CudaBackend::upload(DevicePtr dst, const void *src, size_t bytes) {
  makeCurrent();
  driver_.check(driver_.cuMemcpyHtoD(dst, src, bytes), "copying " + std::to_string(bytes) + " bytes to " + name_);
}

void CudaBackend::download(void *dst, DevicePtr src, size_t bytes) {
  makeCurrent();
  driver_.check(driver_.cuMemcpyDtoH(dst, src, bytes), "copying " + std::to_string(bytes) + " bytes from " + name_);
}

Stream CudaBackend::createStream() {
  makeCurrent();
  CUstream stream = nullptr;
  constexpr unsigned kNonBlocking = 1;  // CU_STREAM_NON_BLOCKING: no implicit sync with stream 0
  driver_.check(driver_.cuStreamCreate(&stream, kNonBlocking), "creating a stream on " + name_);
  return reinterpret_cast<Stream>(stream);
}

void CudaBackend::destroyStream(Stream stream) noexcept {
  if (driver_.cuCtxSetCurrent(context_) == kCudaSuccess) driver_.cuStreamDestroy(reinterpret_cast<CUstream>(stream));
}

void CudaBackend::synchronize(Stream stream) {
  makeCurrent();
  driver_.check(driver_.cuStreamSynchronize(reinterpret_cast<CUstream>(stream)), "waiting for " + name_);
}

std::unique_ptr<LoadedModule> CudaBackend::load(const ModuleSource &module) {
  const Nvrtc &nvrtc = Nvrtc::get();
  std::string key = KernelCache::key(module.source, module.options, arch_, nvrtc.version());
  std::shared_ptr<const std::string> cubin = cache_->get(key, [&] {
    return nvrtc.compile(module.source, module.name, arch_, module.options, Nvrtc::Output::Cubin);
  });
  makeCurrent();
  CUmodule loaded = nullptr;
  driver_.check(driver_.cuModuleLoadData(&loaded, cubin->data()), "loading the compiled " + module.name + " on " + name_);
  return std::make_unique<CudaModule>(driver_, loaded, module.name);
}

}  // namespace scanforge::cuda
