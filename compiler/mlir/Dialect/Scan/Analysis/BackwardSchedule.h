// Analysis: what a generated backward needs from its forward, and where it can get it. The
// backward reads each forward state before each forward step (scan.saved). Targets keep the
// forward states at the start of every time chunk (checkpoints) and recompute the states inside a
// chunk from them; a state that the forward also writes as an f32 output of the same dimensions
// can instead be read back from that output. This analysis states those facts once; docs/ir.md
// says which target uses which.
#pragma once

#include <optional>
#include <vector>

#include "compiler/mlir/Dialect/Scan/Analysis/Ports.h"

namespace scanforge::scan {

struct SavedState {
  Port state;                 // the forward state (a Port of the forward recurrence)
  std::optional<Port> output; // an f32 forward output equal to the state after every step
  bool used = false;          // the backward reads it
};

class BackwardSchedule {
 public:
  // An MLIR analysis of a backward scan.recurrence (one with adjoint_of). On a backward that
  // reads a state its forward does not update it reports a located error and is not valid().
  explicit BackwardSchedule(mlir::Operation *backward);

  bool valid() const { return valid_; }
  const std::vector<SavedState> &saved() const { return saved_; }  // one per forward state

 private:
  bool valid_ = true;
  std::vector<SavedState> saved_;
};

}  // namespace scanforge::scan
