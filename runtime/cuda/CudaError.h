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

// The planner cannot serve the shapes with these kernels (a step of recomputed state, or the chunk
// length asked for, exceeds the shared memory a block has): a property of the recurrence and the
// shapes, not a failure of the device. Callers may pick other shapes or another target.
struct PlanRefused : CudaError {
  using CudaError::CudaError;
};

}  // namespace scanforge::cuda
