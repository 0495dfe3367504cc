// C expressions for dimension sizes, thread indices and memory offsets inside generated kernels.
//
// A channel dimension d has a run-time size `n_d` (a kernel argument) and the thread's index
// `i_d`. A register dimension n has a compile-time size `SF_DIM_n` and a loop variable `r_n`
// inside the fully unrolled loops over a thread's registers. Register arrays are flat, row-major
// over their register dimensions in the recurrence's dimension order.
//
// One register dimension may be the **lane dimension**: its elements are dealt to SF_LANES
// consecutive threads of a warp (a compile-time power of two dividing SF_DIM_n, chosen per call by
// the runtime's planner), each holding SF_REGS_n = SF_DIM_n / SF_LANES of them, element
// e_n = r_n * SF_LANES + sf_lane. So there are two indices: the register index (r_n, over
// SF_REGS_n: register arrays, shared-memory slots) and the element index (e_n, over SF_DIM_n:
// memory). Without a lane dimension, and with SF_LANES = 1, the two coincide.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"

namespace scanforge::cuda {

using scan::DimMask;

// A C identifier made from a port, state or dimension name ('.' and other characters become '_').
std::string identifier(llvm::StringRef name);

class DimExprs {
 public:
  // `lane`: the lane dimension's index, or -1 for none.
  DimExprs(const scan::DimTable &table, DimMask channel, DimMask registers, int lane);

  size_t size() const { return names_.size(); }
  const std::string &name(int dim) const { return names_[dim]; }
  bool isChannel(int dim) const { return channel_ & (DimMask(1) << dim); }
  DimMask channelDims() const { return channel_; }
  DimMask registerDims() const { return registers_; }
  int laneDim() const { return lane_; }  // -1: none
  DimMask laneMask() const { return lane_ < 0 ? 0 : DimMask(1) << lane_; }

  std::string sizeExpr(int dim) const;   // n_d or SF_DIM_n (elements)
  std::string indexExpr(int dim) const;  // i_d, r_n or, for the lane dimension, e_n (element index)
  std::string define(int dim) const;     // SF_DIM_n
  std::string regsDefine(int dim) const; // SF_REGS_n: the lane dimension's elements per thread
  std::string regSizeExpr(int dim) const;   // a register loop's bound: SF_REGS_n for the lane dimension, else SF_DIM_n
  std::string regIndexExpr(int dim) const;  // a register loop's variable: r_n
  // The dimensions in `mask`, in the recurrence's order.
  std::vector<int> dimsOf(DimMask mask) const;

  // Register elements per thread of a value over `mask` (its register part): "SF_DIM_n", "1" when none.
  std::string registerCount(DimMask mask) const;
  // The flat register index of an element over `mask`'s register part; empty for a scalar.
  std::string registerIndex(DimMask mask) const;
  // The same per thread count as a manifest formula (the lane dimension as "(n/$LANES)").
  std::string formulaRegisterCount(DimMask mask) const;
  // Elements over `mask`'s register part in memory (all lanes), and an element's flat index there.
  std::string elementCount(DimMask mask) const;
  std::string elementIndex(DimMask mask) const;
  // Row-major offset over dimensions in memory order, e.g. "(i_d * SF_DIM_n + r_n)"; "0" if none.
  std::string offset(llvm::ArrayRef<int> order) const;
  // The same offset in two parts that add up to it: the thread's part, the same for all its
  // registers (channel indices, the lane), and the register part, a constant once the register
  // loops are unrolled (register indices, the lane dimension's r_n * SF_LANES). Loads can then
  // take the register part as an immediate offset from one address per thread.
  std::string threadOffset(llvm::ArrayRef<int> order) const;
  std::string registerOffset(llvm::ArrayRef<int> order) const;
  // Product of the sizes of `order`, as a C expression ("1" if empty).
  std::string extent(llvm::ArrayRef<int> order) const;
  // The same product in the manifest's formula language (dimension names, "1" if empty).
  std::string formulaExtent(llvm::ArrayRef<int> order) const;

 private:
  // Row-major over `order` with index(dim) as each dimension's index; "0" indices drop out.
  std::string rowMajor(llvm::ArrayRef<int> order, const std::function<std::string(int)> &index) const;

  std::vector<std::string> names_;  // C identifiers of the dimension names
  std::vector<std::string> formulaNames_;
  DimMask channel_, registers_;
  int lane_;
};

}  // namespace scanforge::cuda
