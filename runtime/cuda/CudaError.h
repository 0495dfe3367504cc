// Errors of the CUDA runtime layer. Every message names what was being done (the kernel, the
// shapes, the file) and the CUDA, NVRTC or system error behind it.
#pragma once

#include <stdexcept>
#include <string>

namespace scanforge::cuda {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The CUDA driver, NVRTC or a GPU is missing: callers may fall back to the CPU or skip.
struct CudaUnavailable : CudaError {
  using CudaError::CudaError;
};

}  // namespace scanforge::cuda
