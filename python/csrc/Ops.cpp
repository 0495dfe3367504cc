// The ops of the `scanforge` namespace (torch.ops.scanforge.*), their CPU kernels, and the C++
// autograd function that makes `scan` differentiable in its inputs, parameters and initial states.
//
//   load(path, recurrence, transitions) -> key   compiles a .scan file once (cached by content);
//                                            transitions: its slice transition (context parallelism)
//   load_package(dir, recurrence) -> key     a recurrence of a kernel package (CUDA tensors)
//   signature(key) -> JSON                   the ports (Registry.h)
//   scan(key, inputs, params, initial_names, initial, cu_seqlens) -> outputs..., finals...
//   scan_backward(key, inputs, params, initial_names, initial, output_grads, final_grads, cu_seqlens)
//       -> input grads..., param grads..., initial grads...
//   scan_step(key, inputs, params, state_names, states) -> outputs..., states...   (decoding, CPU)
//   take_warnings() -> messages              the API's warnings given on this thread (a decay above 1)
//
// cu_seqlens (optional) makes a call packed (docs/sequences.md).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "python/csrc/Backends.h"
#include "python/csrc/Device.h"

namespace scanforge::torchext {

namespace {

// A call on CPU tensors runs on the CUDA kernels under the emulator when the test-only switch is
// on (float32/bfloat16), else float64 on the reference interpreter and float32/bfloat16 on the
// Halide programs, which only a compiled .scan file has.
[[noreturn]] void noCpuBackend(const Call &call) {
  C10_THROW_ERROR(ValueError, "scanforge " + call.signature().name + ": a kernel package runs on CUDA tensors only, "
                              "and this call's are on the CPU (the CPU backends need scanforge.load of a .scan file)");
}

std::shared_ptr<cuda::DeviceBackend> emulatorFor(const Call &call) {
  return call.dtype == at::kDouble ? nullptr : emulator();
}

std::vector<at::Tensor> scanCpu(const std::string &key, at::TensorList inputs, at::TensorList params, const Names &initialNames,
                                at::TensorList initial, const c10::optional<at::Tensor> &cuSeqlens) {
  Call call = bindCall(key, inputs, params, initialNames, initial, cuSeqlens);
  if (std::shared_ptr<cuda::DeviceBackend> backend = emulatorFor(call)) {
    std::unique_ptr<DeviceMemory> memory = stagedMemory(*backend);
    return deviceForward(call, {*backend, *memory}, inputs, params, initial);
  }
#if SCANFORGE_TORCH_COMPILER
  if (call.rec->cpu)
    return call.dtype == at::kDouble ? referenceForward(call, inputs, params, initial)
                                     : halideForward(call, inputs, params, initial);
#endif
  noCpuBackend(call);
}

std::vector<at::Tensor> scanBackwardCpu(const std::string &key, at::TensorList inputs, at::TensorList params,
                                        const Names &initialNames, at::TensorList initial, at::TensorList outputGrads,
                                        at::TensorList finalGrads, const c10::optional<at::Tensor> &cuSeqlens) {
  Call call = bindCall(key, inputs, params, initialNames, initial, cuSeqlens);
  checkGradients(call, outputGrads, finalGrads);
  if (std::shared_ptr<cuda::DeviceBackend> backend = emulatorFor(call)) {
    std::unique_ptr<DeviceMemory> memory = stagedMemory(*backend);
    return deviceBackward(call, {*backend, *memory}, inputs, params, initial, outputGrads, finalGrads);
  }
#if SCANFORGE_TORCH_COMPILER
  if (call.rec->cpu)
    return call.dtype == at::kDouble ? referenceBackward(call, inputs, params, initial, outputGrads, finalGrads)
                                     : halideBackward(call, inputs, params, initial, outputGrads, finalGrads);
#endif
  noCpuBackend(call);
}

std::vector<at::Tensor> callScan(const std::string &key, at::TensorList inputs, at::TensorList params, const Names &names,
                                 at::TensorList initial, const c10::optional<at::Tensor> &cuSeqlens) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("scanforge::scan", "")
                       .typed<std::vector<at::Tensor>(const std::string &, at::TensorList, at::TensorList, const Names &,
                                                      at::TensorList, const c10::optional<at::Tensor> &)>();
  return op.call(key, inputs, params, names, initial, cuSeqlens);
}

std::vector<at::Tensor> callScanBackward(const std::string &key, at::TensorList inputs, at::TensorList params,
                                         const Names &names, at::TensorList initial, at::TensorList outputGrads,
                                         at::TensorList finalGrads, const c10::optional<at::Tensor> &cuSeqlens) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("scanforge::scan_backward", "")
                       .typed<std::vector<at::Tensor>(const std::string &, at::TensorList, at::TensorList, const Names &,
                                                      at::TensorList, at::TensorList, at::TensorList,
                                                      const c10::optional<at::Tensor> &)>();
  return op.call(key, inputs, params, names, initial, outputGrads, finalGrads, cuSeqlens);
}

// The autograd node of one scan call. Its backward dispatches scan_backward on the same device.
class ScanFunction : public torch::autograd::Function<ScanFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext *ctx, const std::string &key,
                                                at::TensorList inputs, at::TensorList params, const Names &names,
                                                at::TensorList initial, const c10::optional<at::Tensor> &cuSeqlens) {
    std::vector<at::Tensor> saved(inputs.begin(), inputs.end());
    saved.insert(saved.end(), params.begin(), params.end());
    saved.insert(saved.end(), initial.begin(), initial.end());
    ctx->save_for_backward(saved);
    ctx->saved_data["key"] = key;
    ctx->saved_data["inputs"] = static_cast<int64_t>(inputs.size());
    ctx->saved_data["params"] = static_cast<int64_t>(params.size());
    ctx->saved_data["names"] = c10::List<std::string>(names);
    ctx->saved_data["cu_seqlens"] = cuSeqlens;
    at::AutoDispatchBelowADInplaceOrView below;
    return callScan(key, inputs, params, names, initial, cuSeqlens);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    std::vector<at::Tensor> saved = ctx->get_saved_variables();
    auto nIn = ctx->saved_data["inputs"].toInt(), nParams = ctx->saved_data["params"].toInt();
    at::TensorList all(saved);
    at::TensorList inputs = all.slice(0, nIn), params = all.slice(nIn, nParams), initial = all.slice(nIn + nParams);
    Names names;
    for (const c10::IValue &name : ctx->saved_data["names"].toListRef()) names.push_back(name.toStringRef());
    const std::string key = ctx->saved_data["key"].toStringRef();
    c10::optional<at::Tensor> cuSeqlens = ctx->saved_data["cu_seqlens"].toOptional<at::Tensor>();
    // Unused outputs and final states get no gradient from autograd: they contribute zero.
    Call call = bindCall(key, inputs, params, names, initial, cuSeqlens);
    const Signature &sig = call.signature();
    for (size_t i = 0; i < grads.size(); ++i) {
      if (grads[i].defined()) {
        grads[i] = grads[i].contiguous();  // e.g. the expanded gradient of a sum()
        continue;
      }
      bool output = i < sig.outputs.size();
      grads[i] = at::zeros(output ? call.step(sig.outputs[i]) : call.state(sig.states[i - sig.outputs.size()]),
                           inputs[0].options());
    }
    at::TensorList outputGrads = at::TensorList(grads).slice(0, sig.outputs.size());
    at::TensorList finalGrads = at::TensorList(grads).slice(sig.outputs.size());
    std::vector<at::Tensor> g = callScanBackward(key, inputs, params, names, initial, outputGrads, finalGrads, cuSeqlens);
    // One gradient per argument of forward(): none for the key, the names and cu_seqlens.
    torch::autograd::variable_list out = {at::Tensor()};
    out.insert(out.end(), g.begin(), g.begin() + nIn + nParams);
    out.push_back(at::Tensor());
    out.insert(out.end(), g.begin() + nIn + nParams, g.end());
    out.push_back(at::Tensor());
    return out;
  }
};

std::vector<at::Tensor> scanAutograd(const std::string &key, at::TensorList inputs, at::TensorList params,
                                     const Names &names, at::TensorList initial, const c10::optional<at::Tensor> &cuSeqlens) {
  // Checked before dispatch, so that tensors on mixed devices get this call's message rather than
  // the dispatcher's "could not run ... with arguments from the ... backend".
  bindCall(key, inputs, params, names, initial, cuSeqlens);
  return ScanFunction::apply(key, inputs, params, names, initial, cuSeqlens);
}

// Decoding: one step, inputs [B, dims...] (slices such as x[:, t] are welcome: a step copies them
// if they are not contiguous), every state returned (those not given start at zero). float32 /
// bfloat16 on the Halide step path (Recurrence::step); float64 and the emulator switch run a
// one-step scan instead.
std::vector<at::Tensor> scanStepCpu(const std::string &key, at::TensorList givenInputs, at::TensorList params,
                                    const Names &stateNames, at::TensorList states) {
  std::vector<at::Tensor> inputs;
  for (const at::Tensor &t : givenInputs) inputs.push_back(t.defined() ? t.contiguous() : t);
  const Signature &sig = lookup(key).signature;
  if (sig.reverse)
    C10_THROW_ERROR(ValueError, "scanforge " + sig.name + ".step: '" + sig.name + "' is a reverse recurrence: it runs "
                                "from the last step to the first, so it cannot be decoded one step at a time");
  std::vector<at::Tensor> timed;
  for (size_t i = 0; i < inputs.size() && i < sig.inputs.size(); ++i) {
    if (inputs[i].dim() != 1 + static_cast<int64_t>(sig.inputs[i].dims.size()))
      C10_THROW_ERROR(ValueError, "scanforge " + sig.name + ".step: input '" + sig.inputs[i].name + "' has " +
                                      std::to_string(inputs[i].dim()) + " dimensions; a step's inputs are [B, dims...] "
                                      "(no time axis), and " + sig.inputs[i].name + " has " +
                                      std::to_string(sig.inputs[i].dims.size()) + " dimension(s) of its own");
    timed.push_back(inputs[i].unsqueeze(1));
  }
  Call call = bindCall(key, timed, params, stateNames, states);
#if SCANFORGE_TORCH_COMPILER
  if (call.rec->cpu && call.dtype != at::kDouble && !emulator()) return halideStep(call, inputs, params, states);
#endif
  std::vector<at::Tensor> results = scanCpu(key, timed, params, stateNames, states, {});
  for (size_t o = 0; o < sig.outputs.size(); ++o) results[o] = results[o].squeeze(1);
  return results;
}

}  // namespace

#if !SCANFORGE_TORCH_COMPILER
std::string loadScan(const std::string &path, const std::string &, bool) {
  C10_THROW_ERROR(ValueError, "scanforge.load('" + path + "'): this build has no compiler (runtime-only); "
                              "serve a kernel package with scanforge.load_package");
}
std::vector<std::string> takeWarnings() { return {}; }
void checkParameters(const Loaded &, at::TensorList) {}
#endif

TORCH_LIBRARY(scanforge, m) {
  m.def("load(str path, str recurrence, bool transitions=False) -> str", &loadScan);
  m.def("load_package(str dir, str recurrence) -> str", &loadPackage);
  m.def("signature(str key) -> str", &signatureJson);
  m.def("take_warnings() -> str[]", &takeWarnings);
  m.def("scan(str key, Tensor[] inputs, Tensor[] params, str[] initial_names, Tensor[] initial, "
        "Tensor? cu_seqlens=None) -> Tensor[]");
  m.def("scan_backward(str key, Tensor[] inputs, Tensor[] params, str[] initial_names, Tensor[] initial, "
        "Tensor[] output_grads, Tensor[] final_grads, Tensor? cu_seqlens=None) -> Tensor[]");
  m.def("scan_step(str key, Tensor[] inputs, Tensor[] params, str[] state_names, Tensor[] states) -> Tensor[]");
}

TORCH_LIBRARY_IMPL(scanforge, CPU, m) {
  m.impl("scan", TORCH_FN(scanCpu));
  m.impl("scan_backward", TORCH_FN(scanBackwardCpu));
  m.impl("scan_step", TORCH_FN(scanStepCpu));
}

TORCH_LIBRARY_IMPL(scanforge, Autograd, m) { m.impl("scan", TORCH_FN(scanAutograd)); }

}  // namespace scanforge::torchext
