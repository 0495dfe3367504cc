// Golden test vectors of a kernel package (<package>/goldens/*.json, written by
// `scanc --emit-package` from the float64 reference interpreter): random inputs at small odd
// shapes with the expected outputs, final states and gradients, so that a GPU machine without
// MLIR can check the kernels. Format in docs/cuda.md.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "runtime/cuda/RecurrenceRunner.h"

namespace scanforge::cuda {

struct GoldenTensor {
  std::vector<int64_t> shape;
  std::vector<double> data;  // exactly representable in the buffer's element type
};
using GoldenTensors = std::map<std::string, GoldenTensor>;

struct Golden {
  std::string name;  // where it came from, for messages
  std::string forward;
  Shape shape;
  double f32Tolerance = 0, bf16Tolerance = 0;  // relative error bounds (2-norm over a tensor)
  double errorFloor = 0;  // per element: below floor * sqrt(N) the error is absolute (relativeError)
  GoldenTensors forwardInputs, forwardExpected, backwardInputs, backwardExpected;
};

// Throws CudaError naming `where` when the JSON is not a golden.
Golden readGolden(const nlohmann::json &json, const std::string &where);
// The goldens of a package directory, by file name.
std::vector<Golden> loadGoldens(const std::filesystem::path &packageDir);

struct TensorCheck {
  std::string stage, name;  // stage: forward or backward
  double error = 0, tolerance = 0;
  std::vector<double> got;  // what the device produced, exactly (bf16 and f32 are doubles exactly)
  bool passed() const { return error <= tolerance; }
};

struct GoldenReport {
  std::vector<TensorCheck> checks;
  bool passed() const;
};

// A plan to run goldens under: the planner's choice, or a forced strategy and chunk length.
struct PlanChoice {
  std::optional<Strategy> strategy;
  std::optional<int64_t> chunk;
  std::optional<int64_t> lanes = std::nullopt;  // threads per channel, for a recurrence with a lane dimension
  std::optional<bool> stash = std::nullopt;     // the kernels' stash (Plan::stash)
  std::optional<int64_t> forwardLanes = std::nullopt;  // the forward's, where they differ (Plan::forwardLanes)
  std::string describe() const;
  // The runner's plan at `shape` with what this choice forces (RecurrenceRunner::plan).
  Plan planFor(const RecurrenceRunner &runner, const Shape &shape, Passes passes = Passes::ForwardAndBackward) const;
};
// The planner's own choice, then both strategies with chunks that do not divide the golden
// shapes' T (L=1 makes every step a chunk), each with its stash (sequential L=4, chunked L=5) and
// without it (sequential L=3, chunked L=1): both strategies, both variants of each and ragged last
// chunks run even at small shapes, where the planner alone would always pick the sequential one.
std::vector<PlanChoice> goldenPlans();

// Uploads the golden's inputs, runs forward then backward with `plan`, and compares every
// expected tensor; with Passes::Forward, the forward alone, passed no checkpoints (a plan made for
// it). Throws CudaError if the golden does not fit the package.
GoldenReport runGolden(RecurrenceRunner &runner, const Golden &golden, const Plan &plan,
                       Passes passes = Passes::ForwardAndBackward);

// ||got - want|| / max(||want||, floor * sqrt(N)) (the plain norm of the difference when that is
// zero); a NaN in `got` is infinite. The floor keeps a tensor that cancels to almost nothing from
// dividing its rounding by ~0 (the fuzzer's random programs; docs/fuzzing.md).
double relativeError(const std::vector<double> &got, const std::vector<double> &want, double floor = 0);

// float -> bfloat16 bits, rounding to nearest even (as the kernels do), and back.
uint16_t toBf16(float x);
float fromBf16(uint16_t bits);

}  // namespace scanforge::cuda
