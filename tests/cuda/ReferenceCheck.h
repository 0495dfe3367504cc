// Runs a compiled module's kernels on a device (the CPU emulation, or a GPU) and compares every
// output, final state and gradient with the float64 reference interpreter, through golden vectors
// made in memory. Bounds (relative 2-norm error per tensor): 1e-5 for f32 tensors, 1e-2 for bf16
// tensors (one bf16 rounding is 2^-9 relative), the bounds the package goldens state.
#pragma once

#include <iomanip>

#include "runtime/cuda/Goldens.h"
#include "tests/cuda/CudaTestUtil.h"
#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"
#include "compiler/package/GoldenVectors.h"

namespace scanforge::test {

// Odd shapes: T=1; T=37 (no multiple of any chunk tried); one channel (D=1); 33 channels (a
// partial second warp); 300 channels over 7 steps (a block of 256 threads and a partial second
// along x; with register dimensions, blocks of 64: four and a partial fifth); register dimensions
// of `registerSize` (N=3).
inline std::vector<cuda::Shape> oddShapes(const cuda::RecurrenceDesc &rec, int64_t registerSize) {
  std::vector<cuda::Shape> shapes = {{2, 1, {}}, {2, 37, {}}, {3, 20, {}}, {1, 9, {}}, {2, 7, {}}};
  const int64_t channelSizes[] = {3, 3, 1, 33, 300};
  for (size_t s = 0; s < shapes.size(); ++s) {
    for (size_t i = 0; i < rec.channelDims.size(); ++i) shapes[s].dims[rec.channelDims[i]] = i == 0 ? channelSizes[s] : 2;
    for (const std::string &d : rec.registerDims) shapes[s].dims[d] = registerSize;
  }
  return shapes;
}

// The largest error seen, per stage (forward, backward) and element type.
struct ErrorSummary {
  std::map<std::string, double> worst;
  int runs = 0;
  std::string describe() const {
    std::ostringstream os;
    os << runs << " runs; worst relative error:";
    for (auto &[what, e] : worst) os << " " << what << " " << std::scientific << std::setprecision(2) << e;
    return os.str();
  }
};

// What to run: the odd shapes (or `shapes`), every golden plan, with and without initial states;
// forward and backward, or the forward alone under plans made for it (no checkpoints written).
struct ReferenceRuns {
  int64_t registerSize = 3;
  std::optional<std::vector<cuda::Shape>> shapes;
  std::vector<cuda::PlanChoice> plans = cuda::goldenPlans();
  std::vector<bool> initialStates = {true, false};
  cuda::Passes passes = cuda::Passes::ForwardAndBackward;
  bool atomicSums = false;  // RecurrenceRunner::allowAtomicSums
};

inline void checkAgainstReference(mlir::ModuleOp module, cuda::DeviceBackend &device, ErrorSummary &summary,
                                  const ReferenceRuns &runs = {}) {
  cuda::KernelPackage package = packageOf(module);
  mlir::SymbolTable symbols(module);
  mlir::ModuleAnalysisManager analyses(module, /*passInstrumentor=*/nullptr);
  uint32_t seed = 11;
  for (const cuda::RecurrenceDesc &rec : package.recurrences()) {
    if (!rec.adjointOf.empty()) continue;
    cuda::RecurrenceRunner runner(package, rec.name, device);
    runner.allowAtomicSums(runs.atomicSums);
    auto fwd = symbols.lookup<scan::RecurrenceOp>(rec.name);
    scan::RecurrenceOp bwd = scan::backwardOf(fwd);
    for (const cuda::Shape &shape : runs.shapes ? *runs.shapes : oddShapes(rec, runs.registerSize))
      for (bool withInitial : runs.initialStates) {
        cuda::Golden golden = cuda::readGolden(package::makeGolden(fwd, bwd, analyses, shape, seed++, withInitial), rec.name);
        for (const cuda::PlanChoice &choice : runs.plans) {
          SCOPED_TRACE(rec.name + " " + shape.describe() + (withInitial ? " with initial states" : " from zero") + ", " +
                       choice.describe());
          cuda::GoldenReport report = cuda::runGolden(runner, golden, choice.planFor(runner, shape, runs.passes), runs.passes);
          ++summary.runs;
          for (const cuda::TensorCheck &c : report.checks) {
            const cuda::BufferDesc *b = (c.stage == "forward" ? rec : package.recurrence(rec.backward)).buffer(c.name);
            double &worst = summary.worst[c.stage + " " + b->dtype];
            worst = std::max(worst, c.error);
            EXPECT_LE(c.error, c.tolerance) << c.stage << " " << c.name << " (" << b->dtype << ")";
          }
        }
      }
  }
}

}  // namespace scanforge::test
