// Decoding (Recurrence::step) and packed sequences (forwardPacked, backwardPacked) on the CPU
// backend. A packed call checks its tensors once, then runs forward()'s program / backward() on each
// sequence's views of the packed tensors, so that its results are those of separate calls bit for
// bit (docs/sequences.md).
#include <cstring>

#include "compiler/api/RecurrenceImpl.h"

namespace scanforge {

namespace {

using detail::shapeText;

size_t elementBytes(const TensorView &v) { return v.type == ElemType::BF16 ? 2 : 4; }

int64_t elementsFrom(const std::vector<int64_t> &shape, size_t first) {
  int64_t n = 1;
  for (size_t i = first; i < shape.size(); ++i) n *= shape[i];
  return n;
}

// Steps [start, start + length) of per-step tensors [1, total, dims...], as [1, length, dims...].
TensorViews stepsOf(const TensorViews &views, int64_t start, int64_t length) {
  TensorViews out;
  for (auto &[name, v] : views) {
    TensorView part = v;
    part.data = static_cast<char *>(v.data) + start * elementsFrom(v.shape, 2) * static_cast<int64_t>(elementBytes(v));
    part.shape[1] = length;
    out[name] = part;
  }
  return out;
}

// Row i of state tensors [N, dims...], as [1, dims...].
TensorViews rowOf(const TensorViews &views, int64_t i) {
  TensorViews out;
  for (auto &[name, v] : views) {
    TensorView row = v;
    row.data = static_cast<char *>(v.data) + i * elementsFrom(v.shape, 1) * static_cast<int64_t>(elementBytes(v));
    row.shape[0] = 1;
    out[name] = row;
  }
  return out;
}

// Row i of `to` (if given) becomes row i of `from` (if given), else zeros: an empty sequence's
// final state, or its initial-state gradient.
void passRow(const Signature &sig, const TensorViews &from, const TensorViews &to, int64_t i) {
  TensorViews src = rowOf(from, i), dst = rowOf(to, i);
  for (const Port &s : sig.states) {
    auto d = dst.find(s.name);
    if (d == dst.end()) continue;
    size_t bytes = static_cast<size_t>(elementsFrom(d->second.shape, 1)) * sizeof(float);
    auto f = src.find(s.name);
    if (f != src.end()) std::memcpy(d->second.data, f->second.data, bytes);
    else std::memset(d->second.data, 0, bytes);
  }
}

// The number of sequences of cu_seqlens for a packed call of these shapes.
int64_t sequencesOf(const Recurrence::Impl &impl, const char *call, const std::vector<int64_t> &cu,
                           const Shapes &shapes) {
  std::string where = impl.where(call) + "cu_seqlens ";
  if (shapes.batch != 1)
    throw ShapeError(impl.where(call) + "packed sequences take B = 1 (inputs [1, total, dims...]), got B = " +
                     std::to_string(shapes.batch));
  if (cu.size() < 2)
    throw ShapeError(where + "has " + std::to_string(cu.size()) + " entries; N sequences need N + 1 offsets");
  if (cu.front() != 0) throw ShapeError(where + "starts at " + std::to_string(cu.front()) + ", not 0");
  for (size_t i = 1; i < cu.size(); ++i)
    if (cu[i] < cu[i - 1])
      throw ShapeError(where + "decreases at entry " + std::to_string(i) + " (" + std::to_string(cu[i - 1]) + " then " +
                       std::to_string(cu[i]) + ")");
  if (cu.back() != shapes.steps)
    throw ShapeError(where + "ends at " + std::to_string(cu.back()) + ", but the inputs have total = T = " +
                     std::to_string(shapes.steps) + " steps");
  return static_cast<int64_t>(cu.size()) - 1;
}

}  // namespace

void Recurrence::forwardPacked(const std::vector<int64_t> &cuSeqlens, const TensorViews &inputs,
                               const TensorViews &params, const TensorViews &initial, const TensorViews &outputs,
                               const TensorViews &finals, SavedStates *saved) const {
  const Signature &sig = impl_->signature;
  Shapes shapes = shapesOf(inputs, params);
  int64_t n = sequencesOf(*impl_, "forwardPacked", cuSeqlens, shapes);
  Shapes rows = shapes;
  rows.batch = n;
  impl_->expectForwardResults("forwardPacked", shapes, rows, outputs, initial, finals);
  impl_->warnIfDecayExceedsOne("forwardPacked", params);
  if (saved) {
    *saved = SavedStates();
    saved->shapes_ = shapes;
    saved->cuSeqlens_ = cuSeqlens;
    saved->sequences_.resize(static_cast<size_t>(n));
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t start = cuSeqlens[i], length = cuSeqlens[i + 1] - start;
    if (length == 0) {
      passRow(sig, initial, finals, i);
      continue;
    }
    TensorViews sequence = stepsOf(inputs, start, length);
    runForward(shapesOf(sequence, params), sequence, params, rowOf(initial, i), stepsOf(outputs, start, length),
               rowOf(finals, i), saved ? &saved->sequences_[i] : nullptr, nullptr);
  }
}

void Recurrence::backwardPacked(const std::vector<int64_t> &cuSeqlens, const TensorViews &inputs,
                                const TensorViews &params, const SavedStates &saved, const TensorViews &outputGrads,
                                const TensorViews &finalGrads, const TensorViews &inputGrads,
                                const TensorViews &paramGrads, const TensorViews &initialGrads) const {
  const Signature &sig = impl_->signature;
  Shapes shapes = shapesOf(inputs, params);
  int64_t n = sequencesOf(*impl_, "backwardPacked", cuSeqlens, shapes);
  if (saved.cuSeqlens_ != cuSeqlens || saved.shapes_.steps != shapes.steps || saved.shapes_.dims != shapes.dims)
    throw ShapeError(impl_->where("backwardPacked") +
                     "the saved states do not come from a forwardPacked call with these shapes and cu_seqlens");
  Shapes rows = shapes;
  rows.batch = n;
  impl_->expectBackwardGradients("backwardPacked", shapes, rows, inputGrads, paramGrads, outputGrads, finalGrads,
                                 initialGrads);

  // Each sequence's parameter gradients, then their sum in double, in sequence order.
  std::map<std::string, std::vector<float>> sequenceGrads;
  std::map<std::string, std::vector<double>> totals;
  TensorViews sequenceGradViews;
  for (const Port &p : sig.params) {
    std::vector<float> &grad = sequenceGrads[p.name];
    grad.resize(static_cast<size_t>(elementsFrom(shapes.param(p), 0)));
    sequenceGradViews[p.name] = {grad.data(), shapes.param(p), ElemType::F32};
    totals[p.name].assign(grad.size(), 0.0);
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t start = cuSeqlens[i], length = cuSeqlens[i + 1] - start;
    if (length == 0) {
      passRow(sig, finalGrads, initialGrads, i);
      continue;
    }
    backward(stepsOf(inputs, start, length), params, saved.sequences_[i], stepsOf(outputGrads, start, length),
             rowOf(finalGrads, i), stepsOf(inputGrads, start, length), sequenceGradViews, rowOf(initialGrads, i));
    for (auto &[name, grad] : sequenceGrads)
      for (size_t j = 0; j < grad.size(); ++j) totals[name][j] += grad[j];
  }
  for (auto &[name, total] : totals) {
    float *dst = static_cast<float *>(paramGrads.at(name).data);
    for (size_t j = 0; j < total.size(); ++j) dst[j] = static_cast<float>(total[j]);
  }
}

void Recurrence::step(const TensorViews &inputs, const TensorViews &params, const TensorViews &states,
                      const TensorViews &outputs) const {
  const Signature &sig = impl_->signature;
  if (sig.reverse)
    throw ShapeError(impl_->where("step") + "'" + sig.name +
                     "' is a reverse recurrence: it runs from the last step to the first, so it cannot be decoded "
                     "one step at a time; run forward() over the whole sequence");
  detail::Programs &programs = *impl_->programs;
  std::lock_guard<std::mutex> lock(programs.stepMutex);
  // The same shapes as the last step: no check allocates, the runner is reused.
  const TensorViews *views[] = {&inputs, &params, &states, &outputs};
  const std::vector<Port> *ports[] = {&sig.inputs, &sig.params, &sig.states, &sig.outputs};
  auto same = [&](size_t kind) {
    if (views[kind]->size() != ports[kind]->size()) return false;
    for (const Port &p : *ports[kind]) {
      auto given = views[kind]->find(p.name);
      auto last = programs.stepShapes[kind].find(p.name);
      if (given == views[kind]->end() || last == programs.stepShapes[kind].end() || !given->second.data ||
          given->second.shape != last->second.shape || given->second.type != last->second.type)
        return false;
    }
    return true;
  };
  if (!programs.stepRunner || !same(0) || !same(1) || !same(2) || !same(3)) {
    // Checked as a one-step forward call: inputs [B, 1, dims...].
    TensorViews timed;
    for (const Port &p : sig.inputs) {
      auto it = inputs.find(p.name);
      if (it == inputs.end()) throw ShapeError(impl_->where("step") + "missing input '" + p.name + "'");
      if (it->second.shape.size() != 1 + p.dims.size())
        throw ShapeError(impl_->where("step") + "input '" + p.name + "' has shape " + shapeText(it->second.shape) +
                         "; a step's inputs are [B, dims...] (no time axis), and " + p.name + " has " +
                         std::to_string(p.dims.size()) + " dimension(s) of its own");
      TensorView v = it->second;
      v.shape.insert(v.shape.begin() + 1, 1);
      timed[p.name] = v;
    }
    Shapes shapes = shapesOf(timed, params);
    for (const Port &p : sig.inputs) impl_->expect("step", "input", p, inputs, shapes.state(p), true);
    for (const Port &s : sig.states) impl_->expect("step", "state", s, states, shapes.state(s), true);
    for (const Port &o : sig.outputs) impl_->expect("step", "output", o, outputs, shapes.state(o), true);
    impl_->rejectUnknown("step", "a state", states, sig.states);
    impl_->rejectUnknown("step", "an output", outputs, sig.outputs);
    // Checked with the shapes, at the first step and after a change of them, not at every step.
    impl_->warnIfDecayExceedsOne("step", params);
    programs.stepRunner.reset();
    programs.stepRunner =
        std::make_unique<cpu::StepRunner>(programs.forwardProgram->get(), shapes.batch, impl_->dimSizes(shapes));
    for (size_t kind = 0; kind < 4; ++kind) {
      programs.stepShapes[kind].clear();
      for (auto &[name, v] : *views[kind]) programs.stepShapes[kind][name] = {nullptr, v.shape, v.type};
    }
  }
  cpu::StepRunner &runner = *programs.stepRunner;
  const cpu::ChunkProgram &program = programs.forwardProgram->get();
  for (size_t i = 0; i < program.inputs.size(); ++i) runner.inputs[i] = inputs.find(program.inputs[i].layout.name)->second.data;
  for (size_t i = 0; i < program.params.size(); ++i) runner.params[i] = params.find(program.params[i].layout.name)->second.data;
  for (size_t i = 0; i < program.initial.size(); ++i)
    runner.states[i] = states.find(program.initial[i].layout.name)->second.data;
  for (size_t i = 0; i < program.outputs.size(); ++i)
    runner.outputs[i] = outputs.find(program.outputs[i].layout.name)->second.data;
  runner.run();
}

}  // namespace scanforge
