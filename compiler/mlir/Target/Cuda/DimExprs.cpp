#include "compiler/mlir/Target/Cuda/DimExprs.h"

#include <cctype>

namespace scanforge::cuda {

std::string identifier(llvm::StringRef name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

DimExprs::DimExprs(const scan::DimTable &table, DimMask channel, DimMask registers)
    : channel_(channel), registers_(registers) {
  for (size_t d = 0; d < table.size(); ++d) {
    names_.push_back(identifier(table.name(static_cast<int>(d))));
    formulaNames_.push_back(table.name(static_cast<int>(d)).str());
  }
}

std::string DimExprs::sizeExpr(int dim) const { return isChannel(dim) ? "n_" + names_[dim] : define(dim); }
std::string DimExprs::indexExpr(int dim) const { return (isChannel(dim) ? "i_" : "r_") + names_[dim]; }
std::string DimExprs::define(int dim) const { return "SF_DIM_" + names_[dim]; }

std::vector<int> DimExprs::dimsOf(DimMask mask) const {
  std::vector<int> dims;
  for (size_t d = 0; d < names_.size(); ++d)
    if (mask & (DimMask(1) << d)) dims.push_back(static_cast<int>(d));
  return dims;
}

std::string DimExprs::registerCount(DimMask mask) const { return extent(dimsOf(mask & registers_)); }

std::string DimExprs::registerIndex(DimMask mask) const {
  std::vector<int> dims = dimsOf(mask & registers_);
  if (dims.empty()) return "";
  if (dims.size() == 1) return indexExpr(dims[0]);
  return offset(dims);
}

std::string DimExprs::offset(llvm::ArrayRef<int> order) const {
  if (order.empty()) return "0";
  std::string expr = indexExpr(order[0]);
  for (size_t i = 1; i < order.size(); ++i) expr = "(" + expr + ") * " + sizeExpr(order[i]) + " + " + indexExpr(order[i]);
  return order.size() == 1 ? expr : "(" + expr + ")";
}

std::string DimExprs::extent(llvm::ArrayRef<int> order) const {
  if (order.empty()) return "1";
  std::string expr = sizeExpr(order[0]);
  for (size_t i = 1; i < order.size(); ++i) expr += " * " + sizeExpr(order[i]);
  return order.size() == 1 ? expr : "(" + expr + ")";
}

std::string DimExprs::formulaExtent(llvm::ArrayRef<int> order) const {
  if (order.empty()) return "1";
  std::string expr = formulaNames_[order[0]];
  for (size_t i = 1; i < order.size(); ++i) expr += "*" + formulaNames_[order[i]];
  return expr;
}

}  // namespace scanforge::cuda
