// The gates of a backward step that its recompute walk can compute (docs/cuda.md, "The gate
// stash"): a sequential backward that recomputes its forward states loads the chunk's forward
// inputs in that walk anyway, so the values of the backward's step that depend on those inputs
// alone (gates such as minGRU's sigmoid(k), their derivatives) can be computed there, written to
// the stash, and read back by the reverse walk, which then evaluates no transcendental function.
//
// The values stashed are a cut of the step's data flow: those the rest of the step reads, each
// replaced by its operands where it is arithmetic (no transcendental function) and its operands
// take fewer slots (minGRU's 1 - sigmoid(k) beside sigmoid(k)).
#pragma once

#include <set>
#include <string>

#include "compiler/mlir/Target/Cuda/KernelContext.h"

namespace scanforge::cuda {

struct GateCut {
  OpList ops;     // the backward's ops the recompute walk evaluates, in body order (inputs included)
  OpList leaves;  // those whose values the reverse walk reads from the stash, in body order
};

// `fullOps`: the reverse walk's ops; `loaded`: the forward inputs the recompute walk loads, by
// name. Empty when reading the cut would spare the reverse walk no transcendental function.
GateCut gateCut(const KernelContext &k, const OpList &fullOps, const std::set<std::string> &loaded);

}  // namespace scanforge::cuda
