// The generated CUDA kernels behind the ops, launched through the runtime's RecurrenceRunner on a
// cuda::DeviceBackend. Where the buffers live is a DeviceMemory: torch's CUDA tensors and allocator
// on a GPU (CudaOps.cpp), or the emulator's memory for CPU tensors under the test-only switch
// (tests/python/emulation), so that the code a GPU runs has run in CI.
#pragma once

#include "python/csrc/Call.h"
#include "runtime/cuda/DeviceBackend.h"

namespace scanforge::torchext {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // A call's tensor the kernels read (contiguous, of the buffer's dtype).
  virtual cuda::DevicePtr operand(const at::Tensor &t) = 0;
  // A tensor of `shape` and `type` the kernels write (a uint8 tensor of bytes for scratch).
  virtual std::pair<at::Tensor, cuda::DevicePtr> result(const std::vector<int64_t> &shape, at::ScalarType type) = 0;
  // After the launches: every result() tensor holds what the kernels wrote.
  virtual void finish() = 0;
  virtual cuda::Stream stream() const = 0;
};

// Memory for CPU tensors on a backend with memory of its own (the emulator's): operands are
// copied in, results copied back by finish(). Launches on the default stream.
std::unique_ptr<DeviceMemory> stagedMemory(cuda::DeviceBackend &backend);

// The device and the memory of one call.
struct Device {
  cuda::DeviceBackend &backend;
  DeviceMemory &memory;
};

// As the CPU backends (Backends.h): outputs then finals; input, parameter, initial-state gradients.
std::vector<at::Tensor> deviceForward(const Call &call, const Device &device, at::TensorList inputs, at::TensorList params,
                                      at::TensorList initial);
std::vector<at::Tensor> deviceBackward(const Call &call, const Device &device, at::TensorList inputs, at::TensorList params,
                                       at::TensorList initial, at::TensorList outputGrads, at::TensorList finalGrads);

// The test-only switch: CPU float32/bfloat16 calls run the CUDA kernels on `emulator` (null: back
// to the CPU backend). Set by the emulation library the tests load.
void setEmulator(std::shared_ptr<cuda::DeviceBackend> emulator);
std::shared_ptr<cuda::DeviceBackend> emulator();

}  // namespace scanforge::torchext
