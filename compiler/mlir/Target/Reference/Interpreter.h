// The float64 reference interpreter: executes a forward or backward `scan.recurrence` on host
// tensors, step by step, exactly as the IR says. It is the oracle every backend is tested against.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"

namespace scanforge::reference {

// A dense row-major float64 tensor.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> shape);
  static size_t count(const std::vector<int64_t> &shape);
};
using TensorMap = std::map<std::string, Tensor>;

struct RunInputs {
  TensorMap inputs;        // input name -> [B, T, dims...]; a backward also takes "<output>.grad"
  TensorMap params;        // parameter name -> [dims...]
  TensorMap initial;       // state name -> [B, dims...]; a missing state starts at zero
  // Backward only: the forward states after every step, and their initial values.
  TensorMap saved;         // forward state name -> [B, T, dims...]
  TensorMap savedInitial;  // forward state name -> [B, dims...]; missing means zero
};

struct RunResult {
  TensorMap outputs;  // output name -> [B, T, dims...]
  TensorMap accums;   // accumulated gradient name -> [dims...]
  TensorMap finals;   // state name -> [B, dims...], the value after the last step
  TensorMap states;   // with keepStates: state name -> [B, T, dims...], the value after every step
};

// Raised for inputs that do not fit the recurrence (missing tensors, inconsistent sizes).
struct ShapeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

RunResult run(scan::RecurrenceOp rec, const RunInputs &in, bool keepStates = false);

}  // namespace scanforge::reference
