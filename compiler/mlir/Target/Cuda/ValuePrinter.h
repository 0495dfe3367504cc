// Prints the SSA values of one recurrence step as C++ statements on a thread's registers.
//
// Each value becomes a variable named <prefix><number>: a scalar, or a flat register array over the
// value's register dimensions (its channel dimensions are the thread's own indices). Element-wise
// ops become fully unrolled loops over the result's register dimensions, operands broadcast by
// name; sums over register dimensions add in-thread; a sum over a channel dimension keeps the
// thread's own term (see scan::ParallelDims). One op is one statement, so no parentheses are needed.
#pragma once

#include <functional>
#include <string>

#include "compiler/mlir/Target/Cuda/CodeWriter.h"
#include "compiler/mlir/Target/Cuda/DimExprs.h"
#include "llvm/ADT/DenseMap.h"

namespace scanforge::cuda {

class ValuePrinter {
 public:
  ValuePrinter(scan::RecurrenceOp rec, const scan::DimAnalysis &dims, const DimExprs &exprs, std::string prefix);

  const DimExprs &exprs() const { return exprs_; }
  DimMask dimsOf(mlir::Value v) const { return dims_.of(v); }
  std::string var(mlir::Value v) const;
  // The element of `v` at the current register loop indices (which cover v's register dims).
  std::string element(mlir::Value v) const;
  // "float v3[SF_DIM_n];" / "float v3;" (bool for i1 values).
  void declare(CodeWriter &w, mlir::Value v) const;
  // Fully unrolled loops over the register dimensions in `mask`; `body` prints the innermost
  // statements (the loop variables r_<dim> are in scope).
  void forEachRegister(CodeWriter &w, DimMask mask, const std::function<void(CodeWriter &)> &body) const;
  // Declares `v` and assigns `expr()` to every element (the expression is built inside the loops).
  void assign(CodeWriter &w, mlir::Value v, const std::function<std::string()> &expr) const;

  // Prints a pure op (constant, arithmetic, math, scan.sum) that verifySupported accepted.
  void printMath(CodeWriter &w, mlir::Operation *op) const;
  static bool isMath(mlir::Operation *op);
  // Fails with a located error for an op the CUDA backend cannot print.
  static mlir::LogicalResult verifySupported(mlir::Operation *op);

 private:
  std::string mathExpr(mlir::Operation *op) const;
  void printSum(CodeWriter &w, scan::SumOp sum) const;

  const scan::DimAnalysis &dims_;
  const DimExprs &exprs_;
  llvm::DenseMap<mlir::Value, int> numbers_;
  std::string prefix_;
};

// A C++ float literal that reads back as exactly `value`.
std::string floatLiteral(float value);

}  // namespace scanforge::cuda
