#include "compiler/mlir/Dialect/Scan/Analysis/BackwardSchedule.h"

#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"

namespace scanforge::scan {

BackwardSchedule::BackwardSchedule(mlir::Operation *op) {
  auto backward = llvm::cast<RecurrenceOp>(op);
  RecurrenceOp forward = forwardOf(backward);
  if (!forward) {
    backward.emitError() << "is not the backward of a recurrence of this module";
    valid_ = false;
    return;
  }
  Ports ports(forward);
  for (const Port &state : ports.states()) {
    SavedState saved{state, std::nullopt, false};
    for (const Port &out : ports.outputs())
      if (llvm::cast<OutputOp>(out.op).getValue() == state.op->getResult(0) && !out.bf16 && out.mask == state.mask)
        saved.output = out;
    for (SavedOp s : backward.getBodyBlock().getOps<SavedOp>())
      if (s.getName() == state.name) saved.used = saved.used || !s.getResult().use_empty();
    saved_.push_back(std::move(saved));
  }
  for (SavedOp s : backward.getBodyBlock().getOps<SavedOp>())
    if (llvm::none_of(saved_, [&](const SavedState &d) { return d.state.name == s.getName(); })) {
      s.emitError() << "reads forward state '" << s.getName() << "', which " << forward.getSymName() << " does not update";
      valid_ = false;
    }
}

}  // namespace scanforge::scan
