#include "python/csrc/Device.h"
#include "python/csrc/Errors.h"
#include "python/csrc/Packed.h"
#include "python/csrc/Registry.h"

#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <map>
#include <mutex>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/RecurrenceRunner.h"

namespace scanforge::torchext {

namespace {

std::mutex stateMutex;
std::shared_ptr<cuda::DeviceBackend> emulatorBackend;

// A runner per recurrence and device; a RecurrenceRunner is not for concurrent use, so each
// call holds its runner's lock.
struct Runner {
  Runner(const cuda::KernelPackage &package, const std::string &name, cuda::DeviceBackend &device)
      : runner(package, name, device) {}
  std::mutex mutex;
  cuda::RecurrenceRunner runner;
};
std::map<std::pair<std::string, cuda::DeviceBackend *>, std::unique_ptr<Runner>> runners;

Runner &runnerFor(const Call &call, cuda::DeviceBackend &backend) {
  const cuda::KernelPackage &package = call.rec->kernels();
  std::lock_guard<std::mutex> lock(stateMutex);
  std::unique_ptr<Runner> &slot = runners[{call.rec->key, &backend}];
  if (!slot) slot = std::make_unique<Runner>(package, call.signature().name, backend);
  return *slot;
}

// PyTorch's convention for per-step sums over channels (the selective SSM's B.grad): added
// atomically, fast, unless torch.use_deterministic_algorithms(True) asks for the same bits on every
// run (RecurrenceRunner::allowAtomicSums). Called with the runner's lock held.
void followTorchDeterminism(Runner &r) { r.runner.allowAtomicSums(!at::globalContext().deterministicAlgorithms()); }

at::ScalarType typeOf(const cuda::BufferDesc &b) { return b.dtype == "bf16" ? at::kBFloat16 : at::kFloat; }

// One call's buffers by name (docs/cuda.md names them: ports by name, "<state>.initial",
// "<state>.final", "<port>.grad" for gradients, "<state>.adj.initial" / ".adj.final" for the
// adjoint states), bound to the device's memory.
struct Buffers {
  const Call &call;
  const cuda::RecurrenceRunner &runner;
  DeviceMemory &memory;
  cuda::Plan plan;
  cuda::BufferMap map;

  const cuda::BufferDesc &desc(const cuda::RecurrenceDesc &rec, const std::string &name) const {
    const cuda::BufferDesc *b = rec.buffer(name);
    if (!b) C10_THROW_ERROR(ValueError, "scanforge " + call.signature().name + ": the CUDA kernels of " + rec.name +
                                            " have no buffer '" + name + "' (docs/cuda.md)");
    return *b;
  }
  void operand(const cuda::RecurrenceDesc &rec, const std::string &name, const at::Tensor &t) {
    map[name] = memory.operand(t.to(typeOf(desc(rec, name))).contiguous());
  }
  at::Tensor result(const cuda::RecurrenceDesc &rec, const std::string &name, const std::vector<int64_t> &shape) {
    auto [t, ptr] = memory.result(shape, typeOf(desc(rec, name)));
    map[name] = ptr;
    return t;
  }
  // The workspaces of `rec` and, for a backward to read, its checkpoints, from the device memory's
  // allocator.
  void scratch(const cuda::RecurrenceDesc &rec, cuda::Passes passes) {
    for (const cuda::BufferDesc &b : rec.buffers)
      if ((b.role == cuda::BufferRole::Checkpoint && passes == cuda::Passes::ForwardAndBackward) ||
          b.role == cuda::BufferRole::Workspace)
        map[b.name] = memory.result({static_cast<int64_t>(runner.bytes(b, call.shape, plan))}, at::kByte).second;
  }
  // The forward's operands, outputs and final states (returned), and its scratch (`passes`: the
  // checkpoints only where the backward follows).
  std::vector<at::Tensor> forward(at::TensorList inputs, at::TensorList params, at::TensorList initial, cuda::Passes passes) {
    const Signature &sig = call.signature();
    const cuda::RecurrenceDesc &fwd = runner.forwardDesc();
    for (size_t i = 0; i < inputs.size(); ++i) operand(fwd, sig.inputs[i].name, inputs[i]);
    for (size_t i = 0; i < params.size(); ++i) operand(fwd, sig.params[i].name, params[i]);
    for (size_t i = 0; i < initial.size(); ++i) operand(fwd, cuda::initialOf(call.initialPorts[i]->name), initial[i]);
    std::vector<at::Tensor> results;
    for (const Port &o : sig.outputs) results.push_back(result(fwd, o.name, call.step(o)));
    for (const Port &s : sig.states) results.push_back(result(fwd, cuda::finalOf(s.name), call.state(s)));
    scratch(fwd, passes);
    return results;
  }
};

class StagedMemory : public DeviceMemory {
 public:
  explicit StagedMemory(cuda::DeviceBackend &backend) : backend_(backend) {}

  cuda::DevicePtr operand(const at::Tensor &t) override {
    size_t bytes = t.numel() * t.element_size();
    buffers_.emplace_back(backend_, std::max<size_t>(bytes, 1));
    backend_.upload(buffers_.back().get(), t.data_ptr(), bytes);
    return buffers_.back().get();
  }
  std::pair<at::Tensor, cuda::DevicePtr> result(const std::vector<int64_t> &shape, at::ScalarType type) override {
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(type));
    buffers_.emplace_back(backend_, std::max<size_t>(t.numel() * t.element_size(), 1));
    results_.emplace_back(t, buffers_.back().get());
    return results_.back();
  }
  void finish() override {
    backend_.synchronize(0);
    for (auto &[t, ptr] : results_) backend_.download(t.data_ptr(), ptr, t.numel() * t.element_size());
  }
  cuda::Stream stream() const override { return 0; }

 private:
  cuda::DeviceBackend &backend_;
  std::vector<cuda::DeviceBuffer> buffers_;
  std::vector<std::pair<at::Tensor, cuda::DevicePtr>> results_;
};

std::string gradOf(const std::string &port) { return port + ".grad"; }
std::string adjointOf(const std::string &state) { return state + ".adj"; }

template <class F>
auto guarded(const Call &call, F body) {
  return translated<cuda::CudaError, c10::Error>("scanforge " + call.signature().name + ": ", body);
}

}  // namespace

// A packed call is one launch sequence per sequence, on its part of the tensors (Packed.h);
// boundaries inside the kernels are future work (docs/sequences.md).
std::vector<at::Tensor> deviceForward(const Call &call, const Device &device, at::TensorList inputs, at::TensorList params,
                                      at::TensorList initial) {
  if (call.packed())
    return packedForward(call, inputs, initial, [&](const Call &one, at::TensorList in, at::TensorList init) {
      return deviceForward(one, device, in, params, init);
    });
  return guarded(call, [&] {
    checkParameters(*call.rec, params);
    Runner &r = runnerFor(call, device.backend);
    std::lock_guard<std::mutex> lock(r.mutex);
    followTorchDeterminism(r);
    // No backward reads this forward's checkpoints (the backward runs the forward again): a plan for
    // the forward's kernels alone, and no checkpoints.
    const cuda::Passes alone = cuda::Passes::Forward;
    Buffers buffers{call, r.runner, device.memory, r.runner.plan(call.shape, {}, {}, {}, {}, alone), {}};
    std::vector<at::Tensor> results = buffers.forward(inputs, params, initial, alone);
    r.runner.forward(call.shape, buffers.plan, buffers.map, device.memory.stream());
    device.memory.finish();
    for (at::Tensor &t : results) t = t.to(call.dtype);
    return results;
  });
}

std::vector<at::Tensor> deviceBackward(const Call &call, const Device &device, at::TensorList inputs, at::TensorList params,
                                       at::TensorList initial, at::TensorList outputGrads, at::TensorList finalGrads) {
  if (call.packed())
    return packedBackward(call, inputs, initial, outputGrads, finalGrads,
                          [&](const Call &one, at::TensorList in, at::TensorList init, at::TensorList og, at::TensorList fg) {
                            return deviceBackward(one, device, in, params, init, og, fg);
                          });
  return guarded(call, [&] {
    const Signature &sig = call.signature();
    Runner &r = runnerFor(call, device.backend);
    std::lock_guard<std::mutex> lock(r.mutex);
    followTorchDeterminism(r);
    const cuda::RecurrenceDesc *bwd = r.runner.backwardDesc();
    if (!bwd) C10_THROW_ERROR(ValueError, "scanforge " + sig.name + ": the kernel package has no backward for it");
    Buffers buffers{call, r.runner, device.memory, r.runner.plan(call.shape), {}};
    // The forward again, for its checkpoints (Backends.h says why).
    buffers.forward(inputs, params, initial, cuda::Passes::ForwardAndBackward);
    for (size_t i = 0; i < sig.outputs.size(); ++i) buffers.operand(*bwd, gradOf(sig.outputs[i].name), outputGrads[i]);
    for (size_t i = 0; i < sig.states.size(); ++i)
      buffers.operand(*bwd, cuda::initialOf(adjointOf(sig.states[i].name)), finalGrads[i]);
    std::vector<at::Tensor> grads;
    for (const Port &p : sig.inputs) grads.push_back(buffers.result(*bwd, gradOf(p.name), call.step(p)));
    for (const Port &p : sig.params) grads.push_back(buffers.result(*bwd, gradOf(p.name), call.param(p)));
    for (const Port *s : call.initialPorts)
      grads.push_back(buffers.result(*bwd, cuda::finalOf(adjointOf(s->name)), call.state(*s)));
    buffers.scratch(*bwd, cuda::Passes::ForwardAndBackward);
    r.runner.forward(call.shape, buffers.plan, buffers.map, device.memory.stream());
    r.runner.backward(call.shape, buffers.plan, buffers.map, device.memory.stream());
    device.memory.finish();
    for (at::Tensor &t : grads) t = t.to(call.dtype);
    return grads;
  });
}

std::unique_ptr<DeviceMemory> stagedMemory(cuda::DeviceBackend &backend) {
  return std::make_unique<StagedMemory>(backend);
}

void setEmulator(std::shared_ptr<cuda::DeviceBackend> emulator) {
  std::lock_guard<std::mutex> lock(stateMutex);
  // Runners hold a reference to their device: drop those of the emulator being replaced.
  for (auto it = runners.begin(); it != runners.end();)
    it = it->first.second == emulatorBackend.get() ? runners.erase(it) : std::next(it);
  emulatorBackend = std::move(emulator);
}

std::shared_ptr<cuda::DeviceBackend> emulator() {
  std::lock_guard<std::mutex> lock(stateMutex);
  return emulatorBackend;
}

}  // namespace scanforge::torchext
