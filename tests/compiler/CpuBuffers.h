// Host buffers for the CPU backend: f32 copies of float64 tensors, and views of them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/api/Scanforge.h"
#include "tests/compiler/CompilerTestUtil.h"

namespace scanforge::test {

// f32 copies of float64 tensors, and views of them.
struct Buffers {
  std::map<std::string, std::vector<float>> data;
  std::map<std::string, std::vector<int64_t>> shapes;

  TensorViews add(const TensorMap &tensors, const std::string &suffix = "") {
    TensorViews views;
    for (auto &[name, t] : tensors) views[name] = add(name + suffix, t.shape, &t.data);
    return views;
  }
  TensorView add(const std::string &key, const std::vector<int64_t> &shape, const std::vector<double> *values = nullptr) {
    std::vector<float> &d = data[key];
    d.assign(Tensor::count(shape), 0.0f);
    if (values)
      for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<float>((*values)[i]);
    shapes[key] = shape;
    return {d.data(), shape, ElemType::F32};
  }
  Tensor tensor(const std::string &key) const {
    Tensor t(shapes.at(key));
    const std::vector<float> &d = data.at(key);
    for (size_t i = 0; i < d.size(); ++i) t.data[i] = d[i];
    return t;
  }
};

}  // namespace scanforge::test
