#include "tools/scanc/GoldenVectors.h"

#include <cmath>
#include <random>

#include "compiler/mlir/Target/Reference/Interpreter.h"
#include "runtime/cuda/Goldens.h"

namespace scanforge::tools {

namespace {

using reference::Tensor;

std::vector<int64_t> shapeOf(mlir::ArrayAttr dims, const cuda::Shape &shape, std::vector<int64_t> lead) {
  for (mlir::Attribute d : dims) lead.push_back(shape.dims.at(llvm::cast<mlir::StringAttr>(d).str()));
  return lead;
}

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  // Uniform in [-1, 1] but never within 0.05 of zero, then rounded to the storage type.
  Tensor tensor(std::vector<int64_t> shape, bool bf16) {
    Tensor t(std::move(shape));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (double &v : t.data) {
      do v = dist(rng_);
      while (std::fabs(v) < 0.05);
      float f = static_cast<float>(v);
      v = bf16 ? cuda::fromBf16(cuda::toBf16(f)) : f;
    }
    return t;
  }

 private:
  std::mt19937 rng_;
};

nlohmann::json tensorJson(const Tensor &t) { return {{"shape", t.shape}, {"data", t.data}}; }

bool bf16(std::optional<mlir::Type> storage) { return storage && storage->isBF16(); }

}  // namespace

std::vector<cuda::Shape> goldenShapes(const std::vector<std::string> &channelDims,
                                      const std::vector<std::string> &registerDims) {
  std::vector<cuda::Shape> shapes = {{2, 37, {}}, {1, 70, {}}};
  for (size_t i = 0; i < channelDims.size(); ++i) {
    shapes[0].dims[channelDims[i]] = 3;
    shapes[1].dims[channelDims[i]] = i == 0 ? 33 : 2;
  }
  for (const std::string &d : registerDims) {
    shapes[0].dims[d] = 3;
    shapes[1].dims[d] = 2;
  }
  return shapes;
}

nlohmann::json makeGolden(scan::RecurrenceOp forward, scan::RecurrenceOp backward, const cuda::Shape &shape,
                          uint32_t seed, bool withInitial) {
  Generator gen(seed);
  reference::RunInputs in;
  nlohmann::json fwdInputs, fwdExpected, bwdInputs, bwdExpected;
  std::map<std::string, Tensor> outputGrads, finalGrads;
  for (mlir::Operation &op : forward.getBodyBlock()) {
    if (auto x = llvm::dyn_cast<scan::InputOp>(op)) {
      Tensor t = gen.tensor(shapeOf(x.getDims(), shape, {shape.batch, shape.steps}), bf16(x.getStorage()));
      fwdInputs[x.getName().str()] = tensorJson(t);
      in.inputs[x.getName().str()] = std::move(t);
    } else if (auto p = llvm::dyn_cast<scan::ParamOp>(op)) {
      Tensor t = gen.tensor(shapeOf(p.getDims(), shape, {}), false);
      fwdInputs[p.getName().str()] = tensorJson(t);
      in.params[p.getName().str()] = std::move(t);
    } else if (auto up = llvm::dyn_cast<scan::UpdateOp>(op); up && withInitial) {
      Tensor t = gen.tensor(shapeOf(up.getDims(), shape, {shape.batch}), false);
      fwdInputs[up.getName().str() + ".initial"] = tensorJson(t);
      in.initial[up.getName().str()] = std::move(t);
      finalGrads[up.getName().str()] = gen.tensor(shapeOf(up.getDims(), shape, {shape.batch}), false);
    } else if (auto out = llvm::dyn_cast<scan::OutputOp>(op)) {
      outputGrads[out.getName().str()] =
          gen.tensor(shapeOf(out.getDims(), shape, {shape.batch, shape.steps}), bf16(out.getStorage()));
    }
  }
  reference::RunResult f = reference::run(forward, in, /*keepStates=*/backward != nullptr);
  for (auto &[name, t] : f.outputs) fwdExpected[name] = tensorJson(t);
  for (auto &[name, t] : f.finals) fwdExpected[name + ".final"] = tensorJson(t);

  if (backward) {
    reference::RunInputs b;
    b.inputs = in.inputs;
    b.params = in.params;
    for (auto &[name, t] : outputGrads) {
      bwdInputs[name + ".grad"] = tensorJson(t);
      b.inputs[name + ".grad"] = t;
    }
    for (auto &[name, t] : finalGrads) {
      bwdInputs[name + ".adj.initial"] = tensorJson(t);
      b.initial[name + ".adj"] = t;
    }
    b.saved = f.states;
    b.savedInitial = in.initial;
    reference::RunResult r = reference::run(backward, b);
    for (auto &[name, t] : r.outputs) bwdExpected[name] = tensorJson(t);
    for (auto &[name, t] : r.accums) bwdExpected[name] = tensorJson(t);
    for (auto &[name, t] : r.finals) bwdExpected[name + ".final"] = tensorJson(t);
  }
  auto object = [](nlohmann::json j) { return j.is_null() ? nlohmann::json::object() : j; };
  return {{"format", "scanforge-golden"},
          {"version", 1},
          {"forward", forward.getSymName().str()},
          {"shape", {{"B", shape.batch}, {"T", shape.steps}, {"dims", shape.dims}}},
          {"tolerance", {{"f32", kGoldenF32Tolerance}, {"bf16", kGoldenBf16Tolerance}}},
          {"forward_inputs", object(fwdInputs)},
          {"forward_expected", object(fwdExpected)},
          {"backward_inputs", object(bwdInputs)},
          {"backward_expected", object(bwdExpected)}};
}

}  // namespace scanforge::tools
