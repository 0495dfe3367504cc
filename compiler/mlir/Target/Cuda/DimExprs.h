// C expressions for dimension sizes, thread indices and memory offsets inside generated kernels.
//
// A channel dimension d has a run-time size `n_d` (a kernel argument) and the thread's index
// `i_d`. A register dimension n has a compile-time size `SF_DIM_n` and a loop variable `r_n`
// inside the fully unrolled loops over a thread's registers. Register arrays are flat, row-major
// over their register dimensions in the recurrence's dimension order.
#pragma once

#include <string>
#include <vector>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"

namespace scanforge::cuda {

using scan::DimMask;

// A C identifier made from a port, state or dimension name ('.' and other characters become '_').
std::string identifier(llvm::StringRef name);

class DimExprs {
 public:
  DimExprs(const scan::DimTable &table, DimMask channel, DimMask registers);

  size_t size() const { return names_.size(); }
  const std::string &name(int dim) const { return names_[dim]; }
  bool isChannel(int dim) const { return channel_ & (DimMask(1) << dim); }
  DimMask channelDims() const { return channel_; }
  DimMask registerDims() const { return registers_; }

  std::string sizeExpr(int dim) const;   // n_d or SF_DIM_n
  std::string indexExpr(int dim) const;  // i_d or r_n
  std::string define(int dim) const;     // SF_DIM_n
  // The dimensions in `mask`, in the recurrence's order.
  std::vector<int> dimsOf(DimMask mask) const;

  // Register elements of a value over `mask` (its register part): "SF_DIM_n", "1" when none.
  std::string registerCount(DimMask mask) const;
  // The flat register index of an element over `mask`'s register part; empty for a scalar.
  std::string registerIndex(DimMask mask) const;
  // Row-major offset over dimensions in memory order, e.g. "(i_d * SF_DIM_n + r_n)"; "0" if none.
  std::string offset(llvm::ArrayRef<int> order) const;
  // Product of the sizes of `order`, as a C expression ("1" if empty).
  std::string extent(llvm::ArrayRef<int> order) const;
  // The same product in the manifest's formula language (dimension names, "1" if empty).
  std::string formulaExtent(llvm::ArrayRef<int> order) const;

 private:
  std::vector<std::string> names_;  // C identifiers of the dimension names
  std::vector<std::string> formulaNames_;
  DimMask channel_, registers_;
};

}  // namespace scanforge::cuda
