// Named dimensions of the values in a recurrence body. Every value is a field over a subset of the
// recurrence's dimensions; a set is a bit mask over the recurrence's `dims` list.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "llvm/ADT/DenseMap.h"

namespace scanforge::scan {

using DimMask = uint32_t;
constexpr size_t kMaxDims = 16;

class DimTable {
 public:
  explicit DimTable(RecurrenceOp op);
  int index(llvm::StringRef name) const;  // -1 when the recurrence has no such dimension
  size_t size() const { return names_.size(); }
  llvm::StringRef name(int index) const { return names_[index]; }
  std::string format(DimMask mask) const;  // "[d, n]"
  // The mask of a dims attribute; nullopt when it names an unknown or repeated dimension.
  std::optional<DimMask> mask(mlir::ArrayAttr dims) const;

 private:
  llvm::SmallVector<std::string> names_;
};

// The dimensions of a dims attribute in its listed (layout) order, as indices into the table.
llvm::SmallVector<int> layoutOrder(const DimTable &table, mlir::ArrayAttr dims);

class DimAnalysis {
 public:
  // Computes every value's dimensions; reports a located error and fails on inconsistent IR
  // (unknown dimension, a sum over a dimension its operand lacks, a value wider than its port).
  static mlir::FailureOr<DimAnalysis> compute(RecurrenceOp op);
  // An analysis that computes nothing up front and checks nothing: ofNew() answers for the values
  // asked about. For a rewrite that asks about a few values of IR it keeps consistent.
  static DimAnalysis onDemand(RecurrenceOp op) { return DimAnalysis(op); }

  DimMask of(mlir::Value value) const { return dims_.lookup(value); }
  const DimTable &table() const { return table_; }

  // Dimensions of a value created after the analysis ran (e.g. by a pass), computed from its
  // defining op by the same rules and remembered. The IR must already be consistent.
  DimMask ofNew(mlir::Value value);

 private:
  explicit DimAnalysis(RecurrenceOp op) : table_(op) {}
  DimTable table_;
  llvm::DenseMap<mlir::Value, DimMask> dims_;
};

// Dimension-mask helpers.
inline bool isSubset(DimMask small, DimMask big) { return (small & ~big) == 0; }

}  // namespace scanforge::scan
