#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"

#include "llvm/ADT/TypeSwitch.h"

namespace scanforge::scan {

DimTable::DimTable(RecurrenceOp op) {
  for (mlir::Attribute dim : op.getDims()) names_.push_back(llvm::cast<mlir::StringAttr>(dim).str());
}

int DimTable::index(llvm::StringRef name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  return -1;
}

std::string DimTable::format(DimMask mask) const {
  std::string out = "[";
  bool first = true;
  for (size_t i = 0; i < names_.size(); ++i)
    if (mask & (1u << i)) {
      out += (first ? "" : ", ") + names_[i];
      first = false;
    }
  return out + "]";
}

std::optional<DimMask> DimTable::mask(mlir::ArrayAttr dims) const {
  DimMask mask = 0;
  for (mlir::Attribute attr : dims) {
    int i = index(llvm::cast<mlir::StringAttr>(attr).getValue());
    if (i < 0 || (mask & (1u << i))) return std::nullopt;
    mask |= 1u << i;
  }
  return mask;
}

llvm::SmallVector<int> layoutOrder(const DimTable &table, mlir::ArrayAttr dims) {
  llvm::SmallVector<int> order;
  for (mlir::Attribute attr : dims) order.push_back(table.index(llvm::cast<mlir::StringAttr>(attr).getValue()));
  return order;
}

mlir::FailureOr<DimAnalysis> DimAnalysis::compute(RecurrenceOp rec) {
  DimAnalysis result(rec);
  const DimTable &table = result.table_;
  if (table.size() > kMaxDims) return rec.emitOpError() << "has more than " << kMaxDims << " dimensions";

  auto portMask = [&](mlir::Operation *op, mlir::ArrayAttr dims) -> mlir::FailureOr<DimMask> {
    std::optional<DimMask> mask = table.mask(dims);
    if (!mask) return op->emitOpError() << "names a dimension that the recurrence does not declare, or one twice: "
                                        << dims << " (the recurrence has dims " << rec.getDims() << ")";
    return *mask;
  };
  auto fitsPort = [&](mlir::Operation *op, mlir::Value value, DimMask port, llvm::StringRef name) -> mlir::LogicalResult {
    DimMask have = result.dims_.lookup(value);
    if (isSubset(have, port)) return mlir::success();
    return op->emitOpError() << "writes a value with dimensions " << table.format(have) << " to '" << name
                             << "', which has dimensions " << table.format(port);
  };

  for (mlir::Operation &op : rec.getBodyBlock()) {
    mlir::LogicalResult ok = llvm::TypeSwitch<mlir::Operation *, mlir::LogicalResult>(&op)
        .Case<InputOp, ParamOp, PrevOp, SavedOp>([&](auto port) -> mlir::LogicalResult {
          auto mask = portMask(port, port.getDims());
          if (mlir::failed(mask)) return mlir::failure();
          result.dims_[port.getResult()] = *mask;
          return mlir::success();
        })
        .Case<NextOp>([&](NextOp next) -> mlir::LogicalResult {
          auto mask = portMask(next, next.getDims());
          if (mlir::failed(mask) || mlir::failed(fitsPort(next, next.getValue(), *mask, next.getName())))
            return mlir::failure();
          result.dims_[next.getResult()] = *mask;
          return mlir::success();
        })
        .Case<UpdateOp>([&](UpdateOp update) -> mlir::LogicalResult {
          auto mask = portMask(update, update.getDims());
          if (mlir::failed(mask) || mlir::failed(fitsPort(update, update.getA(), *mask, update.getName())) ||
              mlir::failed(fitsPort(update, update.getB(), *mask, update.getName())))
            return mlir::failure();
          result.dims_[update.getResult()] = *mask;
          return mlir::success();
        })
        .Case<OutputOp, AccumOp>([&](auto sink) -> mlir::LogicalResult {
          auto mask = portMask(sink, sink.getDims());
          if (mlir::failed(mask)) return mlir::failure();
          return fitsPort(sink, sink.getValue(), *mask, sink.getName());
        })
        .Case<SumOp>([&](SumOp sum) -> mlir::LogicalResult {
          int dim = table.index(sum.getDim());
          DimMask operand = result.dims_.lookup(sum.getOperand());
          if (dim < 0) return sum.emitOpError() << "sums over '" << sum.getDim() << "', which is not a dimension of the recurrence";
          if (!(operand & (1u << dim)))
            return sum.emitOpError() << "sums over '" << sum.getDim() << "', which its operand (dimensions "
                                     << table.format(operand) << ") does not have";
          result.dims_[sum.getResult()] = operand & ~(1u << dim);
          return mlir::success();
        })
        .Default([&](mlir::Operation *other) -> mlir::LogicalResult {
          DimMask mask = 0;
          for (mlir::Value operand : other->getOperands()) mask |= result.dims_.lookup(operand);
          for (mlir::Value res : other->getResults()) result.dims_[res] = mask;
          return mlir::success();
        });
    if (mlir::failed(ok)) return mlir::failure();
  }
  return result;
}

DimMask DimAnalysis::ofNew(mlir::Value value) {
  auto it = dims_.find(value);
  if (it != dims_.end()) return it->second;
  mlir::Operation *op = value.getDefiningOp();
  DimMask mask = 0;
  if (auto port = llvm::dyn_cast<PortOpInterface>(op)) {
    mask = table_.mask(port.getDims()).value_or(0);
  } else if (auto sum = llvm::dyn_cast<SumOp>(op)) {
    mask = ofNew(sum.getOperand()) & ~(1u << table_.index(sum.getDim()));
  } else {
    for (mlir::Value operand : op->getOperands()) mask |= ofNew(operand);
  }
  dims_[value] = mask;
  return mask;
}

}  // namespace scanforge::scan
