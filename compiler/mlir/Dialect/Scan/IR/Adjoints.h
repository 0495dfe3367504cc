// How a forward recurrence and its generated backward find each other, and the one place that
// spells the names the autodiff pass gives to what it creates. Consumers never parse these names:
// a backward names its forward with `adjoint_of` (a symbol reference), and each of its adjoint
// ports names the forward port it stands for with `adjoint_of` (Analysis/Ports.h reads both).
#pragma once

#include <string>

#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"

namespace scanforge::scan {

std::string backwardName(llvm::StringRef forward);   // "f.backward"
std::string gradientName(llvm::StringRef port);      // "x.grad": of an input, a parameter or an output
std::string adjointStateName(llvm::StringRef state); // "h.adj": the adjoint carried by the backward

// The backward generated for `forward` (the recurrence of its module whose adjoint_of names it),
// or null when there is none.
RecurrenceOp backwardOf(RecurrenceOp forward);
// The forward recurrence a backward is the adjoint of, or null (a forward, or a dangling reference).
RecurrenceOp forwardOf(RecurrenceOp backward);

}  // namespace scanforge::scan
