// The helper functions every generated kernel source starts with.
#pragma once

#include <string>

namespace scanforge::cuda {

// Self-contained CUDA C++ (no #include), so NVRTC needs no include paths. bf16 tensors are
// passed as their 16-bit patterns (`sf_bf16`, the layout of __nv_bfloat16) and converted with
// integer arithmetic, identical on every architecture and in the CPU emulation.
std::string cudaPrelude();

}  // namespace scanforge::cuda
