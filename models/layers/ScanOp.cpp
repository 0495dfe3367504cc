#include "models/layers/ScanOp.h"

#include <memory>

#include "runtime/core/Error.h"

namespace scanforge::models {
namespace {

TensorView viewOf(const Tensor &t, ElemType type = ElemType::F32) {
  return {t.rawData(), std::vector<int64_t>(t.shape().begin(), t.shape().end()), type};
}

void requireF32(const std::string &op, const std::string &port, const Tensor &t) {
  if (t.dtype() != DType::F32)
    throw RuntimeError(op, "'" + port + "' is " + std::string(nameOf(t.dtype())) +
                       "; compiled recurrences run in f32 (bf16 ports are declared in the .scan file)");
}

struct Layout {
  size_t inputs, params, states;
};

}  // namespace

ScanOp::ScanOp(Recurrence recurrence)
    : recurrence_(std::move(recurrence)),
      op_("scan." + recurrence_.signature().name, [rec = recurrence_](const OpInputs &in) -> OpOutputs {
        const Signature &sig = rec.signature();
        Layout n{sig.inputs.size(), sig.params.size(), in.size() - sig.inputs.size() - sig.params.size()};
        std::string name = "scan." + sig.name;
        TensorViews inputs, params, initial;
        for (size_t i = 0; i < n.inputs; ++i) {
          requireF32(name, sig.inputs[i].name, in[i]);
          inputs[sig.inputs[i].name] = viewOf(in[i]);
        }
        for (size_t i = 0; i < n.params; ++i) {
          requireF32(name, sig.params[i].name, in[n.inputs + i]);
          params[sig.params[i].name] = viewOf(in[n.inputs + i]);
        }
        for (size_t i = 0; i < n.states; ++i) initial[sig.states[i].name] = viewOf(in[n.inputs + n.params + i]);
        Shapes shapes = rec.shapesOf(inputs, params);
        std::vector<Tensor> outputs;
        TensorViews outputViews;
        for (const Port &o : sig.outputs) {
          outputs.push_back(Tensor::empty(shapes.step(o), DType::F32));
          outputViews[o.name] = viewOf(outputs.back());
        }
        auto saved = std::make_shared<SavedStates>();
        rec.forward(inputs, params, initial, outputViews, {}, in.recording() ? saved.get() : nullptr);
        if (!in.recording()) return {outputs, {}};
        std::vector<Tensor> keep = in.tensors;  // the backward reads the inputs and parameters again
        return {outputs, [rec, keep, saved, n, shapes](const std::vector<Tensor> &outputGrads) {
                  const Signature &sig = rec.signature();
                  TensorViews inputs, params, dOutputs, dInputs, dParams, dInitial;
                  std::vector<Tensor> grads;
                  for (size_t i = 0; i < n.inputs; ++i) {
                    inputs[sig.inputs[i].name] = viewOf(keep[i]);
                    grads.push_back(Tensor::empty(keep[i].shape(), DType::F32));
                    dInputs[sig.inputs[i].name] = viewOf(grads.back());
                  }
                  for (size_t i = 0; i < n.params; ++i) {
                    params[sig.params[i].name] = viewOf(keep[n.inputs + i]);
                    grads.push_back(Tensor::empty(keep[n.inputs + i].shape(), DType::F32));
                    dParams[sig.params[i].name] = viewOf(grads.back());
                  }
                  for (size_t i = 0; i < n.states; ++i) {
                    grads.push_back(Tensor::empty(keep[n.inputs + n.params + i].shape(), DType::F32));
                    dInitial[sig.states[i].name] = viewOf(grads.back());
                  }
                  for (size_t i = 0; i < sig.outputs.size(); ++i) dOutputs[sig.outputs[i].name] = viewOf(outputGrads[i]);
                  rec.backward(inputs, params, *saved, dOutputs, {}, dInputs, dParams, dInitial);
                  return grads;
                }};
      }) {}

std::vector<Variable> ScanOp::operator()(const std::vector<Variable> &inputs, const std::vector<Variable> &params,
                                         const std::vector<Variable> &initial) const {
  const Signature &sig = signature();
  if (inputs.size() != sig.inputs.size() || params.size() != sig.params.size() ||
      (!initial.empty() && initial.size() != sig.states.size()))
    throw RuntimeError("scan." + sig.name, "expected " + std::to_string(sig.inputs.size()) + " inputs, " +
                       std::to_string(sig.params.size()) + " parameters and 0 or " + std::to_string(sig.states.size()) +
                       " initial states, got " + std::to_string(inputs.size()) + ", " + std::to_string(params.size()) +
                       " and " + std::to_string(initial.size()));
  std::vector<Variable> all = inputs;
  all.insert(all.end(), params.begin(), params.end());
  all.insert(all.end(), initial.begin(), initial.end());
  return op_(all);
}

std::vector<Tensor> ScanOp::stream(const std::vector<Tensor> &inputs, const std::vector<Tensor> &params,
                                   std::vector<Tensor> &states) const {
  const Signature &sig = signature();
  TensorViews in, par, initial, outputs, finals;
  for (size_t i = 0; i < sig.inputs.size(); ++i) in[sig.inputs[i].name] = viewOf(inputs.at(i));
  for (size_t i = 0; i < sig.params.size(); ++i) par[sig.params[i].name] = viewOf(params.at(i));
  Shapes shapes = recurrence_.shapesOf(in, par);
  if (shapes.steps == 1 && !sig.reverse) return step(in, par, shapes, states);
  std::vector<Tensor> next;
  for (size_t i = 0; i < sig.states.size(); ++i) {
    initial[sig.states[i].name] = viewOf(states.at(i));
    next.push_back(Tensor::empty(states[i].shape(), DType::F32));
    finals[sig.states[i].name] = viewOf(next.back());
  }
  std::vector<Tensor> result;
  for (const Port &o : sig.outputs) {
    result.push_back(Tensor::empty(shapes.step(o), DType::F32));
    outputs[o.name] = viewOf(result.back());
  }
  recurrence_.forward(in, par, initial, outputs, finals, nullptr);
  states = std::move(next);
  return result;
}

// One token: the decoding path (Recurrence::step), on [B, dims...] views of the [B, 1, dims...]
// tensors, advancing a copy of the states.
std::vector<Tensor> ScanOp::step(const TensorViews &inputs, const TensorViews &params, const Shapes &shapes,
                                 std::vector<Tensor> &states) const {
  const Signature &sig = signature();
  auto dropTime = [](TensorView v) {
    v.shape.erase(v.shape.begin() + 1);
    return v;
  };
  TensorViews in, carried, outputs;
  for (auto &[name, v] : inputs) in[name] = dropTime(v);
  std::vector<Tensor> next;
  for (size_t i = 0; i < sig.states.size(); ++i) {
    next.push_back(states.at(i).clone());
    carried[sig.states[i].name] = viewOf(next.back());
  }
  std::vector<Tensor> result;
  for (const Port &o : sig.outputs) {
    result.push_back(Tensor::empty(shapes.step(o), DType::F32));
    outputs[o.name] = dropTime(viewOf(result.back()));
  }
  recurrence_.step(in, params, carried, outputs);
  states = std::move(next);
  return result;
}

}  // namespace scanforge::models
