#include "compiler/mlir/Target/Cuda/RecurrenceInfo.h"

#include <cctype>

namespace scanforge::cuda {

namespace {

bool isIdentifier(llvm::StringRef name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return llvm::all_of(name, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

PortDesc describe(const scan::DimTable &table, mlir::Operation *op, bool bf16 = false) {
  auto dims = op->getAttrOfType<mlir::ArrayAttr>("dims");
  PortDesc p;
  p.name = op->getAttrOfType<mlir::StringAttr>("name").str();
  p.mask = table.mask(dims).value_or(0);
  p.layout = scan::layoutOrder(table, dims);
  p.bf16 = bf16;
  return p;
}

bool storedAsBf16(std::optional<mlir::Type> storage) { return storage && storage->isBF16(); }

}  // namespace

mlir::FailureOr<RecurrenceInfo> RecurrenceInfo::collect(scan::RecurrenceOp rec, scan::RecurrenceOp forward) {
  scan::DimTable table(rec);
  for (size_t d = 0; d < table.size(); ++d)
    if (!isIdentifier(table.name(static_cast<int>(d))))
      return rec.emitError() << "the CUDA backend needs dimension names that are identifiers, not '"
                             << table.name(static_cast<int>(d)) << "'";
  if (forward && forward.getDims() != rec.getDims())
    return rec.emitError() << "the backward recurrence's dimensions " << rec.getDims()
                           << " differ from its forward's " << forward.getDims();

  RecurrenceInfo info;
  info.op = rec;
  info.descending = rec.getReverse();
  for (mlir::Operation &op : rec.getBodyBlock()) {
    if (auto in = llvm::dyn_cast<scan::InputOp>(op)) info.inputs.push_back(describe(table, in, storedAsBf16(in.getStorage())));
    if (auto p = llvm::dyn_cast<scan::ParamOp>(op)) info.params.push_back(describe(table, p));
    if (auto out = llvm::dyn_cast<scan::OutputOp>(op))
      info.outputs.push_back(describe(table, out, storedAsBf16(out.getStorage())));
    if (auto acc = llvm::dyn_cast<scan::AccumOp>(op)) info.accums.push_back(describe(table, acc));
    if (auto up = llvm::dyn_cast<scan::UpdateOp>(op)) info.states.push_back(describe(table, up));
  }
  if (!forward) return info;

  for (scan::UpdateOp up : forward.getBodyBlock().getOps<scan::UpdateOp>()) {
    SavedDesc saved;
    saved.state = describe(table, up);
    for (scan::OutputOp out : forward.getBodyBlock().getOps<scan::OutputOp>())
      if (out.getValue() == up.getResult() && !storedAsBf16(out.getStorage()) &&
          table.mask(out.getDims()) == table.mask(up.getDims()))
        saved.output = describe(table, out);
    for (scan::SavedOp s : rec.getBodyBlock().getOps<scan::SavedOp>())
      if (s.getName() == up.getName()) saved.used = saved.used || !s.getResult().use_empty();
    info.saved.push_back(std::move(saved));
  }
  for (scan::SavedOp s : rec.getBodyBlock().getOps<scan::SavedOp>())
    if (llvm::none_of(info.saved, [&](const SavedDesc &d) { return d.state.name == s.getName(); }))
      return s.emitError() << "reads forward state '" << s.getName() << "', which " << forward.getSymName()
                           << " does not update";
  return info;
}

int RecurrenceInfo::stateIndex(llvm::StringRef name) const {
  for (size_t i = 0; i < states.size(); ++i)
    if (states[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<const SavedDesc *> RecurrenceInfo::recomputed() const {
  std::vector<const SavedDesc *> out;
  for (const SavedDesc &s : saved)
    if (s.used && !s.output) out.push_back(&s);
  return out;
}

}  // namespace scanforge::cuda
