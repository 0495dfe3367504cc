// Analysis: what keeps each state's decay within [-1, 1]. A state s = a * s + b whose |a| exceeds 1
// grows without bound over the steps (the selective SSM's exp(softplus(dt) * A) with some A > 0), a
// legal recurrence but almost always a training accident. For each state of a forward recurrence
// the decay a is shown bounded for every input, bounded under sign or magnitude conditions on
// parameters (exp(softplus(dt) * A) needs A <= 0, lambda * h needs |lambda| <= 1), or not shown
// (a form the rules below do not know, such as an input as the decay). The CPU API checks the
// conditions on the parameters a call passes (docs/dsl.md, "Decays above 1").
#pragma once

#include <string>
#include <vector>

#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"

namespace scanforge::scan {

// A condition on every element of a parameter.
struct ParameterBound {
  enum Kind { NonPositive, NonNegative, MagnitudeAtMostOne };
  std::string param;
  Kind kind;
  // "A <= 0", "|lambda| <= 1", ...: the condition as a message states it.
  std::string text() const;
  bool holds(float value) const;
};

struct DecayBound {
  std::string state;
  bool shown = false;                     // false: not shown bounded, conditions empty
  std::vector<ParameterBound> conditions; // all of them keep |a| <= 1 for every input
};

class DecayBounds {
 public:
  explicit DecayBounds(mlir::Operation *recurrence);  // an MLIR analysis of a forward scan.recurrence

  const std::vector<DecayBound> &states() const { return states_; }  // in the order of the updates

 private:
  std::vector<DecayBound> states_;
};

}  // namespace scanforge::scan
