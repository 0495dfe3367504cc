// float64 calls run on the reference interpreter, which executes the recurrence and its generated
// backward step by step, exactly as the IR says: the path torch.autograd.gradcheck checks.
#include <c10/util/Exception.h>

#include <cstring>

#include "compiler/api/CompiledModuleImpl.h"
#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"
#include "compiler/mlir/Target/Reference/Gradients.h"
#include "python/csrc/Backends.h"
#include "python/csrc/Errors.h"
#include "python/csrc/Packed.h"

namespace scanforge::torchext {

namespace {

reference::Tensor toReference(const at::Tensor &t) {
  reference::Tensor r(t.sizes().vec());
  std::memcpy(r.data.data(), t.data_ptr<double>(), r.data.size() * sizeof(double));
  return r;
}

at::Tensor fromReference(const reference::Tensor &r) {
  at::Tensor t = at::empty(r.shape, at::TensorOptions().dtype(at::kDouble));
  std::memcpy(t.data_ptr<double>(), r.data.data(), r.data.size() * sizeof(double));
  return t;
}

reference::RunInputs runInputs(const Call &call, at::TensorList inputs, at::TensorList params, at::TensorList initial) {
  const Signature &sig = call.signature();
  reference::RunInputs in;
  for (size_t i = 0; i < inputs.size(); ++i) in.inputs[sig.inputs[i].name] = toReference(inputs[i]);
  for (size_t i = 0; i < params.size(); ++i) in.params[sig.params[i].name] = toReference(params[i]);
  for (size_t i = 0; i < initial.size(); ++i) in.initial[call.initialPorts[i]->name] = toReference(initial[i]);
  return in;
}

scan::RecurrenceOp forwardOp(const Call &call) { return call.rec->module->impl().forward(call.signature().name); }

// The reference's own check of a call (after Call.cpp's) as a ValueError.
template <class F>
auto guarded(const Call &call, F body) {
  return translated<reference::ShapeError, c10::ValueError>("scanforge " + call.signature().name + " (float64 reference): ",
                                                            body);
}

}  // namespace

std::vector<at::Tensor> referenceForward(const Call &call, at::TensorList inputs, at::TensorList params, at::TensorList initial) {
  if (call.packed())
    return packedForward(call, inputs, initial, [&](const Call &one, at::TensorList in, at::TensorList init) {
      return referenceForward(one, in, params, init);
    });
  const Signature &sig = call.signature();
  reference::RunResult r = guarded(call, [&] { return reference::run(forwardOp(call), runInputs(call, inputs, params, initial)); });
  std::vector<at::Tensor> results;
  for (const Port &o : sig.outputs) results.push_back(fromReference(r.outputs.at(o.name)));
  for (const Port &s : sig.states) results.push_back(fromReference(r.finals.at(s.name)));
  return results;
}

std::vector<at::Tensor> referenceBackward(const Call &call, at::TensorList inputs, at::TensorList params,
                                          at::TensorList initial, at::TensorList outputGrads, at::TensorList finalGrads) {
  if (call.packed())
    return packedBackward(call, inputs, initial, outputGrads, finalGrads,
                          [&](const Call &one, at::TensorList in, at::TensorList init, at::TensorList og, at::TensorList fg) {
                            return referenceBackward(one, in, params, init, og, fg);
                          });
  const Signature &sig = call.signature();
  reference::RunInputs in = runInputs(call, inputs, params, initial);
  reference::GradientSeeds seeds;
  for (size_t i = 0; i < sig.outputs.size(); ++i) seeds.outputs[sig.outputs[i].name] = toReference(outputGrads[i]);
  for (size_t i = 0; i < sig.states.size(); ++i) seeds.finals[sig.states[i].name] = toReference(finalGrads[i]);
  reference::Gradients g = guarded(call, [&] {
    scan::RecurrenceOp fwd = forwardOp(call);
    return reference::runBackward(scan::backwardOf(fwd), in, reference::run(fwd, in, /*keepStates=*/true), seeds);
  });
  std::vector<at::Tensor> results;
  for (const Port &p : sig.inputs) results.push_back(fromReference(g.inputs.at(p.name)));
  for (const Port &p : sig.params) results.push_back(fromReference(g.params.at(p.name)));
  for (const Port *s : call.initialPorts) results.push_back(fromReference(g.initial.at(s->name)));
  return results;
}

}  // namespace scanforge::torchext
