// The float64 reference of a forward recurrence's generated backward, keyed by FORWARD port names:
// callers give output and final-state gradients by output and state name and get input,
// parameter and initial-state gradients by input, parameter and state name. The backward's own
// port names are looked up through its `adjoint_of` attributes (scan::Ports), never spelled here.
#pragma once

#include "compiler/mlir/Target/Reference/Interpreter.h"

namespace scanforge::reference {

struct GradientSeeds {
  TensorMap outputs;  // forward output name -> dL/d(output) [B, T, dims...]; missing: zero
  TensorMap finals;   // forward state name -> dL/d(final state) [B, dims...]; missing: zero
};

struct Gradients {
  TensorMap inputs;   // forward input name -> dL/d(input) [B, T, dims...]
  TensorMap params;   // parameter name -> dL/d(parameter) [dims...], summed over b and t
  TensorMap initial;  // forward state name -> dL/d(initial state) [B, dims...]
};

// Runs `backward` (the generated backward of the forward that `forward` and `forwardRun` come
// from; forwardRun must hold the states after every step, see run(..., keepStates)).
Gradients runBackward(scan::RecurrenceOp backward, const RunInputs &forward, const RunResult &forwardRun,
                      const GradientSeeds &seeds);

}  // namespace scanforge::reference
