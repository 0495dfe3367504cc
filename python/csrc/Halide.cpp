// The CPU programs take each port in its declared element type (f32 or bf16; parameters and
// states always f32), so a call's tensors are converted to those types on the way in and the
// results back to the call's dtype on the way out.
#include <c10/util/Exception.h>

#include "python/csrc/Backends.h"
#include "python/csrc/Errors.h"

namespace scanforge::torchext {

namespace {

at::ScalarType torchType(ElemType t) { return t == ElemType::BF16 ? at::kBFloat16 : at::kFloat; }

// Tensors converted for the backend, kept alive for the call, and their views by port name.
struct Views {
  std::vector<at::Tensor> keep;
  TensorViews views;

  void add(const Port &port, const at::Tensor &t, ElemType type) {
    keep.push_back(t.to(torchType(type)).contiguous());
    views[port.name] = {keep.back().data_ptr(), keep.back().sizes().vec(), type};
  }
  // A fresh tensor of `shape` the backend writes into.
  at::Tensor make(const Port &port, std::vector<int64_t> shape, ElemType type) {
    keep.push_back(at::empty(shape, at::TensorOptions().dtype(torchType(type))));
    views[port.name] = {keep.back().data_ptr(), std::move(shape), type};
    return keep.back();
  }
};

struct Operands {
  Views inputs, params, initial;
  Operands(const Call &call, at::TensorList in, at::TensorList pr, at::TensorList init) {
    const Signature &sig = call.signature();
    for (size_t i = 0; i < in.size(); ++i) inputs.add(sig.inputs[i], in[i], sig.inputs[i].type);
    for (size_t i = 0; i < pr.size(); ++i) params.add(sig.params[i], pr[i], ElemType::F32);
    for (size_t i = 0; i < init.size(); ++i) initial.add(*call.initialPorts[i], init[i], ElemType::F32);
  }
};

}  // namespace

std::vector<at::Tensor> halideForward(const Call &call, at::TensorList inputs, at::TensorList params, at::TensorList initial) {
  const Signature &sig = call.signature();
  Operands ops(call, inputs, params, initial);
  Views outputs, finals;
  std::vector<at::Tensor> results;
  for (const Port &o : sig.outputs) results.push_back(outputs.make(o, call.step(o), o.type));
  for (const Port &s : sig.states) results.push_back(finals.make(s, call.state(s), ElemType::F32));
  translated<ShapeError, c10::ValueError>("scanforge ", [&] {
    const Recurrence &rec = *call.rec->cpu;
    if (call.packed())
      rec.forwardPacked(call.cuSeqlens, ops.inputs.views, ops.params.views, ops.initial.views, outputs.views, finals.views,
                        nullptr);
    else
      rec.forward(ops.inputs.views, ops.params.views, ops.initial.views, outputs.views, finals.views, nullptr);
  });
  for (at::Tensor &r : results) r = r.to(call.dtype);
  return results;
}

std::vector<at::Tensor> halideBackward(const Call &call, at::TensorList inputs, at::TensorList params, at::TensorList initial,
                                       at::TensorList outputGrads, at::TensorList finalGrads) {
  const Signature &sig = call.signature();
  const Recurrence &rec = *call.rec->cpu;
  Operands ops(call, inputs, params, initial);
  Views outputs, seeds, finalSeeds, inputGrads, paramGrads, initialGrads;
  for (const Port &o : sig.outputs) outputs.make(o, call.step(o), o.type);
  for (size_t i = 0; i < sig.outputs.size(); ++i) seeds.add(sig.outputs[i], outputGrads[i], sig.outputs[i].type);
  for (size_t i = 0; i < sig.states.size(); ++i) finalSeeds.add(sig.states[i], finalGrads[i], ElemType::F32);
  std::vector<at::Tensor> results;
  for (const Port &p : sig.inputs) results.push_back(inputGrads.make(p, call.step(p), p.type));
  for (const Port &p : sig.params) results.push_back(paramGrads.make(p, call.param(p), ElemType::F32));
  for (const Port *s : call.initialPorts) results.push_back(initialGrads.make(*s, call.state(*s), ElemType::F32));
  translated<ShapeError, c10::ValueError>("scanforge ", [&] {
    SavedStates saved;
    if (call.packed()) {
      rec.forwardPacked(call.cuSeqlens, ops.inputs.views, ops.params.views, ops.initial.views, outputs.views, {}, &saved);
      rec.backwardPacked(call.cuSeqlens, ops.inputs.views, ops.params.views, saved, seeds.views, finalSeeds.views,
                         inputGrads.views, paramGrads.views, initialGrads.views);
    } else {
      rec.forward(ops.inputs.views, ops.params.views, ops.initial.views, outputs.views, {}, &saved);
      rec.backward(ops.inputs.views, ops.params.views, saved, seeds.views, finalSeeds.views, inputGrads.views,
                   paramGrads.views, initialGrads.views);
    }
  });
  for (at::Tensor &r : results) r = r.to(call.dtype);
  return results;
}

std::vector<at::Tensor> halideStep(const Call &call, at::TensorList inputs, at::TensorList params, at::TensorList states) {
  const Signature &sig = call.signature();
  Views in, pr, st, outputs;
  for (size_t i = 0; i < inputs.size(); ++i) in.add(sig.inputs[i], inputs[i], sig.inputs[i].type);
  for (size_t i = 0; i < params.size(); ++i) pr.add(sig.params[i], params[i], ElemType::F32);
  // The step overwrites its states: fresh tensors, the given states' values or zeros.
  std::vector<at::Tensor> results;
  for (const Port &o : sig.outputs) results.push_back(outputs.make(o, call.state(o), o.type));
  for (const Port &s : sig.states) {
    at::Tensor fresh = st.make(s, call.state(s), ElemType::F32);
    fresh.zero_();
    for (size_t i = 0; i < states.size(); ++i)
      if (call.initialPorts[i] == &s) fresh.copy_(states[i]);
    results.push_back(fresh);
  }
  translated<ShapeError, c10::ValueError>("scanforge ", [&] { call.rec->cpu->step(in.views, pr.views, st.views, outputs.views); });
  for (at::Tensor &r : results) r = r.to(call.dtype);
  return results;
}

}  // namespace scanforge::torchext
