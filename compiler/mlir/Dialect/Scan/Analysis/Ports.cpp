#include "compiler/mlir/Dialect/Scan/Analysis/Ports.h"

#include "llvm/ADT/TypeSwitch.h"

namespace scanforge::scan {

namespace {

bool storedAsBf16(std::optional<mlir::Type> storage) { return storage && storage->isBF16(); }

Port describe(const DimTable &table, PortOpInterface op, PortKind kind, bool bf16,
              std::optional<llvm::StringRef> adjointOf) {
  Port p;
  p.name = op.getName().str();
  p.kind = kind;
  p.mask = table.mask(op.getDims()).value_or(0);
  p.layout = layoutOrder(table, op.getDims());
  p.bf16 = bf16;
  if (adjointOf) p.adjointOf = adjointOf->str();
  p.op = op;
  return p;
}

}  // namespace

Ports::Ports(mlir::Operation *recurrence) : table_(llvm::cast<RecurrenceOp>(recurrence)) {
  for (mlir::Operation &op : llvm::cast<RecurrenceOp>(recurrence).getBodyBlock())
    llvm::TypeSwitch<mlir::Operation *>(&op)
        .Case<InputOp>([&](InputOp in) {
          inputs_.push_back(describe(table_, in, PortKind::Input, storedAsBf16(in.getStorage()), in.getAdjointOf()));
        })
        .Case<ParamOp>([&](ParamOp p) { params_.push_back(describe(table_, p, PortKind::Param, false, std::nullopt)); })
        .Case<UpdateOp, NextOp>([&](auto up) {
          states_.push_back(describe(table_, up, PortKind::State, false, up.getAdjointOf()));
        })
        .Case<OutputOp>([&](OutputOp out) {
          outputs_.push_back(describe(table_, out, PortKind::Output, storedAsBf16(out.getStorage()), out.getAdjointOf()));
        })
        .Case<AccumOp>([&](AccumOp acc) { accums_.push_back(describe(table_, acc, PortKind::Accum, false, acc.getAdjointOf())); });
}

const std::vector<Port> &Ports::of(PortKind kind) const {
  switch (kind) {
    case PortKind::Input: return inputs_;
    case PortKind::Param: return params_;
    case PortKind::State: return states_;
    case PortKind::Output: return outputs_;
    case PortKind::Accum: return accums_;
  }
  llvm_unreachable("unknown port kind");
}

const Port *Ports::find(PortKind kind, llvm::StringRef name) const {
  for (const Port &p : of(kind))
    if (p.name == name) return &p;
  return nullptr;
}

const Port *Ports::adjoint(PortKind kind, llvm::StringRef primal) const {
  for (const Port &p : of(kind))
    if (p.adjointOf && *p.adjointOf == primal) return &p;
  return nullptr;
}

}  // namespace scanforge::scan
