#include "python/csrc/Packed.h"

namespace scanforge::torchext {

namespace {

// Sequence i of a packed call as a call of its own.
Call sequence(const Call &call, size_t i) {
  Call one = call;
  one.cuSeqlens.clear();
  one.shape.batch = 1;
  one.shape.steps = call.cuSeqlens[i + 1] - call.cuSeqlens[i];
  return one;
}

std::vector<at::Tensor> stepsOf(at::TensorList tensors, int64_t start, int64_t length) {
  std::vector<at::Tensor> out;
  for (const at::Tensor &t : tensors) out.push_back(t.narrow(1, start, length).contiguous());
  return out;
}

std::vector<at::Tensor> rowsOf(at::TensorList tensors, int64_t i) {
  std::vector<at::Tensor> out;
  for (const at::Tensor &t : tensors) out.push_back(t.narrow(0, i, 1).contiguous());
  return out;
}

// Row i of the tensor `given` has for `state` among `ports` (zeros if none): what an empty
// sequence passes through.
at::Tensor passed(const Call &call, const Port &state, const std::vector<const Port *> &ports, at::TensorList given,
                  int64_t i, const at::TensorOptions &options) {
  for (size_t j = 0; j < ports.size(); ++j)
    if (ports[j] == &state) return given[j].narrow(0, i, 1);
  std::vector<int64_t> shape = call.state(state);
  shape[0] = 1;
  return at::zeros(shape, options);
}

}  // namespace

std::vector<at::Tensor> packedForward(const Call &call, at::TensorList inputs, at::TensorList initial,
                                      const SequenceForward &forward) {
  const Signature &sig = call.signature();
  std::vector<std::vector<at::Tensor>> outputs(sig.outputs.size()), finals(sig.states.size());
  for (size_t i = 0; i + 1 < call.cuSeqlens.size(); ++i) {
    int64_t start = call.cuSeqlens[i], length = call.cuSeqlens[i + 1] - start, row = static_cast<int64_t>(i);
    if (length == 0) {
      for (size_t s = 0; s < sig.states.size(); ++s)
        finals[s].push_back(passed(call, sig.states[s], call.initialPorts, initial, row, inputs[0].options()));
      continue;
    }
    std::vector<at::Tensor> r = forward(sequence(call, i), stepsOf(inputs, start, length), rowsOf(initial, row));
    for (size_t o = 0; o < outputs.size(); ++o) outputs[o].push_back(r[o]);
    for (size_t s = 0; s < finals.size(); ++s) finals[s].push_back(r[outputs.size() + s]);
  }
  std::vector<at::Tensor> results;
  for (auto &pieces : outputs) results.push_back(at::cat(pieces, 1));
  for (auto &rows : finals) results.push_back(at::cat(rows, 0));
  return results;
}

std::vector<at::Tensor> packedBackward(const Call &call, at::TensorList inputs, at::TensorList initial,
                                       at::TensorList outputGrads, at::TensorList finalGrads,
                                       const SequenceBackward &backward) {
  const Signature &sig = call.signature();
  std::vector<const Port *> statePorts;
  for (const Port &s : sig.states) statePorts.push_back(&s);
  std::vector<std::vector<at::Tensor>> inputGrads(sig.inputs.size()), initialGrads(call.initialPorts.size());
  std::vector<at::Tensor> paramGrads;
  for (const Port &p : sig.params) paramGrads.push_back(at::zeros(call.param(p), inputs[0].options().dtype(at::kDouble)));
  for (size_t i = 0; i + 1 < call.cuSeqlens.size(); ++i) {
    int64_t start = call.cuSeqlens[i], length = call.cuSeqlens[i + 1] - start, row = static_cast<int64_t>(i);
    if (length == 0) {
      for (size_t k = 0; k < initialGrads.size(); ++k)
        initialGrads[k].push_back(passed(call, *call.initialPorts[k], statePorts, finalGrads, row, inputs[0].options()));
      continue;
    }
    std::vector<at::Tensor> g = backward(sequence(call, i), stepsOf(inputs, start, length), rowsOf(initial, row),
                                         stepsOf(outputGrads, start, length), rowsOf(finalGrads, row));
    for (size_t j = 0; j < inputGrads.size(); ++j) inputGrads[j].push_back(g[j]);
    for (size_t j = 0; j < paramGrads.size(); ++j) paramGrads[j] += g[inputGrads.size() + j].to(at::kDouble);
    for (size_t k = 0; k < initialGrads.size(); ++k) initialGrads[k].push_back(g[inputGrads.size() + paramGrads.size() + k]);
  }
  std::vector<at::Tensor> results;
  for (auto &pieces : inputGrads) results.push_back(at::cat(pieces, 1));
  for (at::Tensor &p : paramGrads) results.push_back(p.to(call.dtype));
  for (auto &rows : initialGrads) results.push_back(at::cat(rows, 0));
  return results;
}

}  // namespace scanforge::torchext
