// Host buffers for the CPU backend (f32 copies of float64 tensors, and views of them), and one
// forward and backward run of a problem on it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/api/Scanforge.h"
#include "tests/compiler/CompilerTestUtil.h"
#include "tests/compiler/ModelHarness.h"

namespace scanforge::test {

// f32 copies of float64 tensors, and views of them. A view starts `shift` floats into its vector
// (a caller's buffer at an address no allocator would give).
struct Buffers {
  std::map<std::string, std::vector<float>> data;
  std::map<std::string, std::vector<int64_t>> shapes;
  int64_t shift = 0;

  TensorViews add(const TensorMap &tensors, const std::string &suffix = "") {
    TensorViews views;
    for (auto &[name, t] : tensors) views[name] = add(name + suffix, t.shape, &t.data);
    return views;
  }
  TensorView add(const std::string &key, const std::vector<int64_t> &shape, const std::vector<double> *values = nullptr) {
    std::vector<float> &d = data[key];
    d.assign(Tensor::count(shape) + shift, 0.0f);
    if (values)
      for (size_t i = 0; i < Tensor::count(shape); ++i) d[shift + i] = static_cast<float>((*values)[i]);
    shapes[key] = shape;
    return {d.data() + shift, shape, ElemType::F32};
  }
  Tensor tensor(const std::string &key) const {
    Tensor t(shapes.at(key));
    const std::vector<float> &d = data.at(key);
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = d[shift + i];
    return t;
  }
};

// Runs `rec` forward and backward on the problem, every tensor `shift` floats into its buffer; the
// results are the tensors "out.NAME", "final.NAME", "dx.NAME", "dp.NAME" and "dh0.NAME" of the
// returned buffers.
inline Buffers runForwardBackward(const Recurrence &rec, const Problem &p, int64_t shift = 0) {
  Buffers buf;
  buf.shift = shift;
  TensorViews inputs = buf.add(p.in.inputs), params = buf.add(p.in.params), initial = buf.add(p.in.initial, ".init");
  TensorViews outputs, finals, outputGrads = buf.add(p.outputWeights, ".w"), finalGrads = buf.add(p.finalWeights, ".fw");
  Shapes shapes = rec.shapesOf(inputs, params);
  for (const Port &o : rec.signature().outputs) outputs[o.name] = buf.add("out." + o.name, shapes.step(o));
  for (const Port &s : rec.signature().states) finals[s.name] = buf.add("final." + s.name, shapes.state(s));
  SavedStates saved;
  rec.forward(inputs, params, initial, outputs, finals, &saved);
  TensorViews inputGrads, paramGrads, initialGrads;
  for (const Port &in : rec.signature().inputs) inputGrads[in.name] = buf.add("dx." + in.name, shapes.step(in));
  for (const Port &par : rec.signature().params) paramGrads[par.name] = buf.add("dp." + par.name, shapes.param(par));
  for (const Port &s : rec.signature().states) initialGrads[s.name] = buf.add("dh0." + s.name, shapes.state(s));
  rec.backward(inputs, params, saved, outputGrads, finalGrads, inputGrads, paramGrads, initialGrads);
  return buf;
}

}  // namespace scanforge::test
