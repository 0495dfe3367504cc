#include "runtime/cuda/CudaDriver.h"

#include <cstdlib>
#include <memory>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/DynamicLibrary.h"

namespace scanforge::cuda {

namespace {

struct LoadedDriver {
  std::unique_ptr<DynamicLibrary> library;
  CudaDriver api{};
  std::string error;  // why the driver is unusable, if it is
};

LoadedDriver load() {
  LoadedDriver d;
  try {
    const char *override = std::getenv("SCANFORGE_CUDA_DRIVER");
    d.library = std::make_unique<DynamicLibrary>(
        DynamicLibrary::open({override && *override ? override : "libcuda.so.1"}, "CUDA driver"));
    const DynamicLibrary &lib = *d.library;
    CudaDriver &a = d.api;
    lib.resolve(a.cuInit, "cuInit");
    lib.resolve(a.cuDriverGetVersion, "cuDriverGetVersion");
    lib.resolve(a.cuDeviceGetCount, "cuDeviceGetCount");
    lib.resolve(a.cuDeviceGet, "cuDeviceGet");
    lib.resolve(a.cuDeviceGetName, "cuDeviceGetName");
    lib.resolve(a.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    lib.resolve(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    lib.resolve(a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    lib.resolve(a.cuCtxSetCurrent, "cuCtxSetCurrent");
    lib.resolve(a.cuModuleLoadData, "cuModuleLoadData");
    lib.resolve(a.cuModuleUnload, "cuModuleUnload");
    lib.resolve(a.cuModuleGetFunction, "cuModuleGetFunction");
    lib.resolve(a.cuFuncSetAttribute, "cuFuncSetAttribute");
    lib.resolve(a.cuLaunchKernel, "cuLaunchKernel");
    lib.resolve(a.cuMemAlloc, "cuMemAlloc_v2");
    lib.resolve(a.cuMemFree, "cuMemFree_v2");
    lib.resolve(a.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    lib.resolve(a.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    lib.resolve(a.cuMemsetD8Async, "cuMemsetD8Async");
    lib.resolve(a.cuStreamCreate, "cuStreamCreate");
    lib.resolve(a.cuStreamDestroy, "cuStreamDestroy_v2");
    lib.resolve(a.cuStreamSynchronize, "cuStreamSynchronize");
    lib.resolve(a.cuGetErrorName, "cuGetErrorName");
    lib.resolve(a.cuGetErrorString, "cuGetErrorString");
    CUresult init = a.cuInit(0);
    int devices = 0;
    if (init == kCudaSuccess) init = a.cuDeviceGetCount(&devices);
    if (init != kCudaSuccess) d.error = "no CUDA device usable (cuInit: " + a.describe(init) + ")";
    else if (devices == 0) d.error = "no CUDA device found (the driver at " + lib.path() + " reports none)";
  } catch (const CudaUnavailable &e) {
    d.error = e.what();
  }
  return d;
}

}  // namespace

const CudaDriver &CudaDriver::get() {
  static const LoadedDriver driver = load();
  if (!driver.error.empty()) throw CudaUnavailable(driver.error);
  return driver.api;
}

std::string CudaDriver::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  cuGetErrorName(result, &name);
  cuGetErrorString(result, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(result)) + " (" + (text ? text : "unknown error") + ")";
}

void CudaDriver::check(CUresult result, const std::string &what) const {
  if (result != kCudaSuccess) throw CudaError(what + ": " + describe(result));
}

}  // namespace scanforge::cuda
