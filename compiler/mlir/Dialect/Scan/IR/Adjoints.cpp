#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"

namespace scanforge::scan {

std::string backwardName(llvm::StringRef forward) { return (forward + ".backward").str(); }
std::string gradientName(llvm::StringRef port) { return (port + ".grad").str(); }
std::string adjointStateName(llvm::StringRef state) { return (state + ".adj").str(); }

RecurrenceOp backwardOf(RecurrenceOp forward) {
  auto module = forward->getParentOfType<mlir::ModuleOp>();
  if (!module) return nullptr;
  for (RecurrenceOp rec : module.getOps<RecurrenceOp>())
    if (rec.getAdjointOf() == forward.getSymName()) return rec;
  return nullptr;
}

RecurrenceOp forwardOf(RecurrenceOp backward) {
  std::optional<llvm::StringRef> forward = backward.getAdjointOf();
  if (!forward) return nullptr;
  return llvm::dyn_cast_or_null<RecurrenceOp>(mlir::SymbolTable::lookupNearestSymbolFrom(
      backward, mlir::StringAttr::get(backward.getContext(), *forward)));
}

}  // namespace scanforge::scan
