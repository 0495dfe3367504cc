// The ops' CUDA kernels (builds against a PyTorch with CUDA): the generated kernels on torch's
// current stream of the tensors' device, every buffer (outputs, gradients, checkpoints and
// workspaces) from torch's caching allocator, so that they follow torch's stream semantics.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <map>
#include <mutex>

#include "python/csrc/Device.h"
#include "runtime/cuda/CudaBackend.h"

namespace scanforge::torchext {

namespace {

class TorchCudaMemory : public DeviceMemory {
 public:
  explicit TorchCudaMemory(at::Device device)
      : device_(device), stream_(reinterpret_cast<cuda::Stream>(c10::cuda::getCurrentCUDAStream(device.index()).stream())) {}

  cuda::DevicePtr operand(const at::Tensor &t) override {
    keep_.push_back(t);
    return reinterpret_cast<cuda::DevicePtr>(t.data_ptr());
  }
  std::pair<at::Tensor, cuda::DevicePtr> result(const std::vector<int64_t> &shape, at::ScalarType type) override {
    keep_.push_back(at::empty(shape, at::TensorOptions().dtype(type).device(device_)));
    return {keep_.back(), reinterpret_cast<cuda::DevicePtr>(keep_.back().data_ptr())};
  }
  void finish() override {}  // the results are ordered on the stream like any torch kernel's
  cuda::Stream stream() const override { return stream_; }

 private:
  at::Device device_;
  cuda::Stream stream_;
  std::vector<at::Tensor> keep_;  // alive until the launches are queued
};

cuda::DeviceBackend &backendFor(int index) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<cuda::CudaBackend>> backends;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<cuda::CudaBackend> &slot = backends[index];
  if (!slot) slot = std::make_unique<cuda::CudaBackend>(index);
  return *slot;
}

Call bindCudaCall(const std::string &key, at::TensorList inputs, at::TensorList params, const Names &names,
                  at::TensorList initial, const c10::optional<at::Tensor> &cuSeqlens) {
  Call call = bindCall(key, inputs, params, names, initial, cuSeqlens);
  if (call.dtype == at::kDouble)
    C10_THROW_ERROR(TypeError, "scanforge " + call.signature().name +
                                   ": the CUDA kernels take float32 or bfloat16 tensors; float64 runs on the CPU");
  return call;
}

std::vector<at::Tensor> scanCuda(const std::string &key, at::TensorList inputs, at::TensorList params, const Names &names,
                                 at::TensorList initial, const c10::optional<at::Tensor> &cuSeqlens) {
  Call call = bindCudaCall(key, inputs, params, names, initial, cuSeqlens);
  c10::cuda::CUDAGuard guard(inputs[0].device());
  TorchCudaMemory memory(inputs[0].device());
  return deviceForward(call, {backendFor(inputs[0].device().index()), memory}, inputs, params, initial);
}

std::vector<at::Tensor> scanBackwardCuda(const std::string &key, at::TensorList inputs, at::TensorList params,
                                         const Names &names, at::TensorList initial, at::TensorList outputGrads,
                                         at::TensorList finalGrads, const c10::optional<at::Tensor> &cuSeqlens) {
  Call call = bindCudaCall(key, inputs, params, names, initial, cuSeqlens);
  checkGradients(call, outputGrads, finalGrads);
  c10::cuda::CUDAGuard guard(inputs[0].device());
  TorchCudaMemory memory(inputs[0].device());
  return deviceBackward(call, {backendFor(inputs[0].device().index()), memory}, inputs, params, initial, outputGrads,
                        finalGrads);
}

}  // namespace

TORCH_LIBRARY_IMPL(scanforge, CUDA, m) {
  m.impl("scan", TORCH_FN(scanCuda));
  m.impl("scan_backward", TORCH_FN(scanBackwardCuda));
}

}  // namespace scanforge::torchext
