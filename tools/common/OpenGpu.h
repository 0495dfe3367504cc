// The GPU tools' shared start: open a device, or report a visible skip. Exit code 77 is the skip
// code ctest is told about for `gpu`-labelled tests.
#pragma once

#include <iostream>
#include <memory>
#include <string>

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaError.h"

namespace scanforge::tools {

constexpr int kNoGpuExit = 77;

// CUDA device `ordinal` with its kernel cache in `cacheDir`, or null after printing
// "[SKIP] no CUDA driver/GPU: <why>" when there is no driver, device or NVRTC.
inline std::unique_ptr<cuda::CudaBackend> openGpuOrSkip(int ordinal, const std::string &cacheDir) {
  try {
    return std::make_unique<cuda::CudaBackend>(ordinal, std::make_shared<cuda::KernelCache>(cacheDir));
  } catch (const cuda::CudaUnavailable &e) {
    std::cout << "[SKIP] no CUDA driver/GPU: " << e.what() << "\n";
    return nullptr;
  }
}

}  // namespace scanforge::tools
