#include "compiler/package/GoldenVectors.h"

#include <cmath>
#include <random>

#include "compiler/mlir/Dialect/Scan/Analysis/Ports.h"
#include "compiler/mlir/Target/Reference/Gradients.h"
#include "runtime/cuda/Goldens.h"

namespace scanforge::package {

namespace {

using reference::Tensor;

std::vector<int64_t> shapeOf(const scan::Ports &ports, const scan::Port &port, const cuda::Shape &shape,
                             std::vector<int64_t> lead) {
  for (int d : port.layout) lead.push_back(shape.dims.at(ports.table().name(d).str()));
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

nlohmann::json makeGolden(scan::RecurrenceOp forward, scan::RecurrenceOp backward, mlir::AnalysisManager analyses,
                          const cuda::Shape &shape, uint32_t seed, bool withInitial) {
  const scan::Ports &ports = analyses.getChildAnalysis<scan::Ports>(forward);
  Generator gen(seed);
  reference::RunInputs in;
  reference::GradientSeeds seeds;
  nlohmann::json fwdInputs, fwdExpected, bwdInputs, bwdExpected;
  // Drawn in body order (inputs, parameters, states, outputs interleaved as declared), so that a
  // golden's values depend on the seed and the recurrence only.
  for (mlir::Operation &op : forward.getBodyBlock()) {
    if (auto x = llvm::dyn_cast<scan::InputOp>(op)) {
      const scan::Port &p = *ports.find(scan::PortKind::Input, x.getName());
      Tensor t = gen.tensor(shapeOf(ports, p, shape, {shape.batch, shape.steps}), p.bf16);
      fwdInputs[p.name] = tensorJson(t);
      in.inputs[p.name] = std::move(t);
    } else if (auto param = llvm::dyn_cast<scan::ParamOp>(op)) {
      const scan::Port &p = *ports.find(scan::PortKind::Param, param.getName());
      Tensor t = gen.tensor(shapeOf(ports, p, shape, {}), false);
      fwdInputs[p.name] = tensorJson(t);
      in.params[p.name] = std::move(t);
    } else if (auto up = llvm::dyn_cast<scan::UpdateOp>(op); up && withInitial) {
      const scan::Port &p = *ports.find(scan::PortKind::State, up.getName());
      Tensor t = gen.tensor(shapeOf(ports, p, shape, {shape.batch}), false);
      fwdInputs[cuda::initialOf(p.name)] = tensorJson(t);
      in.initial[p.name] = std::move(t);
      seeds.finals[p.name] = gen.tensor(shapeOf(ports, p, shape, {shape.batch}), false);
    } else if (auto out = llvm::dyn_cast<scan::OutputOp>(op)) {
      const scan::Port &p = *ports.find(scan::PortKind::Output, out.getName());
      seeds.outputs[p.name] = gen.tensor(shapeOf(ports, p, shape, {shape.batch, shape.steps}), p.bf16);
    }
  }
  reference::RunResult f = reference::run(forward, in, /*keepStates=*/backward != nullptr);
  for (auto &[name, t] : f.outputs) fwdExpected[name] = tensorJson(t);
  for (auto &[name, t] : f.finals) fwdExpected[cuda::finalOf(name)] = tensorJson(t);

  if (backward) {
    // The backward's buffers are named after its own ports (the adjoints of the forward's).
    const scan::Ports &adjoints = analyses.getChildAnalysis<scan::Ports>(backward);
    auto adjoint = [&](scan::PortKind kind, const std::string &primal) { return adjoints.adjoint(kind, primal)->name; };
    for (auto &[name, t] : seeds.outputs) bwdInputs[adjoint(scan::PortKind::Input, name)] = tensorJson(t);
    for (auto &[name, t] : seeds.finals) bwdInputs[cuda::initialOf(adjoint(scan::PortKind::State, name))] = tensorJson(t);
    reference::Gradients g = reference::runBackward(backward, in, f, seeds);
    for (auto &[name, t] : g.inputs) bwdExpected[adjoint(scan::PortKind::Output, name)] = tensorJson(t);
    for (auto &[name, t] : g.params) bwdExpected[adjoint(scan::PortKind::Accum, name)] = tensorJson(t);
    for (auto &[name, t] : g.initial) bwdExpected[cuda::finalOf(adjoint(scan::PortKind::State, name))] = tensorJson(t);
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

}  // namespace scanforge::package
