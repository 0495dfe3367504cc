// Analysis: the ports of one recurrence — what it reads and writes, with their dimensions, memory
// layout and element type — and, for a generated backward, which forward port each adjoint port
// stands for (its typed `adjoint_of`). Every consumer (the API's signature, the CPU programs, the
// CUDA kernels and their package, golden vectors, `scanc run`) takes ports from here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"

namespace scanforge::scan {

enum class PortKind { Input, Param, State, Output, Accum };

struct Port {
  std::string name;
  PortKind kind = PortKind::Input;
  DimMask mask = 0;                       // its dimensions
  llvm::SmallVector<int> layout;          // the same dimensions in memory order (the last is contiguous)
  bool bf16 = false;                      // stored as bfloat16 (computed in f32)
  std::optional<std::string> adjointOf;   // a backward's adjoint port: the forward port it stands for
  mlir::Operation *op = nullptr;          // the declaring op (a state's: its update)
};

class Ports {
 public:
  // An MLIR analysis of a scan.recurrence (cached by an AnalysisManager, see docs/ir.md).
  explicit Ports(mlir::Operation *recurrence);

  const DimTable &table() const { return table_; }
  const std::vector<Port> &inputs() const { return inputs_; }    // a backward's include output gradients
  const std::vector<Port> &params() const { return params_; }
  const std::vector<Port> &states() const { return states_; }    // a backward's are adjoint states
  const std::vector<Port> &outputs() const { return outputs_; }  // a backward's are input gradients
  const std::vector<Port> &accums() const { return accums_; }    // parameter gradients
  const std::vector<Port> &of(PortKind kind) const;

  // The port of `kind` named `name`; null when there is none.
  const Port *find(PortKind kind, llvm::StringRef name) const;
  // In a backward: its port of `kind` that is the adjoint of forward port `primal` (an output
  // gradient is an Input adjoint of a forward output, an input gradient an Output adjoint of a
  // forward input, a parameter gradient an Accum, an adjoint state a State); null when none.
  const Port *adjoint(PortKind kind, llvm::StringRef primal) const;

 private:
  DimTable table_;
  std::vector<Port> inputs_, params_, states_, outputs_, accums_;
};

}  // namespace scanforge::scan
