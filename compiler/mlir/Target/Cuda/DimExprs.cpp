#include "compiler/mlir/Target/Cuda/DimExprs.h"

#include <cctype>

namespace scanforge::cuda {

std::string identifier(llvm::StringRef name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

DimExprs::DimExprs(const scan::DimTable &table, DimMask channel, DimMask registers, int lane)
    : channel_(channel), registers_(registers), lane_(lane) {
  for (size_t d = 0; d < table.size(); ++d) {
    names_.push_back(identifier(table.name(static_cast<int>(d))));
    formulaNames_.push_back(table.name(static_cast<int>(d)).str());
  }
}

std::string DimExprs::sizeExpr(int dim) const { return isChannel(dim) ? "n_" + names_[dim] : define(dim); }
std::string DimExprs::indexExpr(int dim) const {
  return (isChannel(dim) ? "i_" : dim == lane_ ? "e_" : "r_") + names_[dim];
}
std::string DimExprs::define(int dim) const { return "SF_DIM_" + names_[dim]; }
std::string DimExprs::regsDefine(int dim) const { return "SF_REGS_" + names_[dim]; }
std::string DimExprs::regSizeExpr(int dim) const { return dim == lane_ ? regsDefine(dim) : sizeExpr(dim); }
std::string DimExprs::regIndexExpr(int dim) const { return "r_" + names_[dim]; }

std::vector<int> DimExprs::dimsOf(DimMask mask) const {
  std::vector<int> dims;
  for (size_t d = 0; d < names_.size(); ++d)
    if (mask & (DimMask(1) << d)) dims.push_back(static_cast<int>(d));
  return dims;
}

std::string DimExprs::registerCount(DimMask mask) const {
  std::vector<int> dims = dimsOf(mask & registers_);
  if (dims.empty()) return "1";
  std::string expr = regSizeExpr(dims[0]);
  for (size_t i = 1; i < dims.size(); ++i) expr += " * " + regSizeExpr(dims[i]);
  return dims.size() == 1 ? expr : "(" + expr + ")";
}

std::string DimExprs::registerIndex(DimMask mask) const {
  std::vector<int> dims = dimsOf(mask & registers_);
  if (dims.empty()) return "";
  std::string expr = regIndexExpr(dims[0]);
  for (size_t i = 1; i < dims.size(); ++i) expr = "(" + expr + ") * " + regSizeExpr(dims[i]) + " + " + regIndexExpr(dims[i]);
  return dims.size() == 1 ? expr : "(" + expr + ")";
}

std::string DimExprs::formulaRegisterCount(DimMask mask) const {
  std::vector<int> dims = dimsOf(mask & registers_);
  if (dims.empty()) return "1";
  std::string expr;
  for (int d : dims) expr += (expr.empty() ? "" : "*") + formulaNames_[d];
  // The product over all lanes, then divided (exact: the lanes divide the lane dimension's size).
  return mask & laneMask() ? expr + "/$LANES" : expr;
}

std::string DimExprs::elementCount(DimMask mask) const { return extent(dimsOf(mask & registers_)); }

std::string DimExprs::elementIndex(DimMask mask) const {
  std::vector<int> dims = dimsOf(mask & registers_);
  if (dims.empty()) return "";
  return offset(dims);
}

std::string DimExprs::offset(llvm::ArrayRef<int> order) const {
  return rowMajor(order, [&](int d) { return indexExpr(d); });
}

std::string DimExprs::threadOffset(llvm::ArrayRef<int> order) const {
  return rowMajor(order, [&](int d) -> std::string {
    return isChannel(d) ? indexExpr(d) : d == lane_ ? "sf_lane" : "0";
  });
}

std::string DimExprs::registerOffset(llvm::ArrayRef<int> order) const {
  return rowMajor(order, [&](int d) -> std::string {
    return isChannel(d) ? "0" : d == lane_ ? regIndexExpr(d) + " * SF_LANES" : regIndexExpr(d);
  });
}

std::string DimExprs::rowMajor(llvm::ArrayRef<int> order, const std::function<std::string(int)> &index) const {
  std::string expr = "0";
  for (int d : order) {
    std::string i = index(d);
    if (expr == "0") expr = i;
    else if (i == "0") expr = "(" + expr + ") * " + sizeExpr(d);
    else expr = "(" + expr + ") * " + sizeExpr(d) + " + " + i;
  }
  return order.size() == 1 || expr == "0" ? expr : "(" + expr + ")";
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
