#include "compiler/mlir/Target/Cuda/GateCut.h"

#include "compiler/mlir/Target/Cuda/StepCost.h"
#include "compiler/mlir/Target/Cuda/StepLoop.h"
#include "llvm/ADT/SetVector.h"

namespace scanforge::cuda {

namespace {

using mlir::Operation;

class Cut {
 public:
  Cut(const KernelContext &k, const std::set<std::string> &loaded) : k_(k), loaded_(loaded) {}

  // Computed from the loaded forward inputs, parameters and constants alone, one float per thread.
  bool computable(Operation *op) {
    if (auto it = memo_.find(op); it != memo_.end()) return it->second;
    bool ok = false;
    if (k_.invariant.count(op)) {
      ok = true;
    } else if (op->getNumResults() != 1 || k_.exprs.registerCount(k_.values.dimsOf(op->getResult(0))) != "1") {
      ok = false;
    } else if (auto in = llvm::dyn_cast<scan::InputOp>(op)) {
      ok = loaded_.count(in.getName().str()) > 0;
    } else if (ValuePrinter::isMath(op) && !llvm::isa<scan::SumOp>(op)) {
      ok = llvm::all_of(op->getOperands(), [&](mlir::Value v) { return v.getDefiningOp() && computable(v.getDefiningOp()); });
    }
    return memo_[op] = ok;
  }

  // What a walk that has `op` needs of the cut's side: its operands computed per step.
  llvm::SmallSetVector<Operation *, 4> stepOperands(Operation *op) {
    llvm::SmallSetVector<Operation *, 4> out;
    for (mlir::Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && computable(def) && !k_.invariant.count(def)) out.insert(def);
    return out;
  }

 private:
  const KernelContext &k_;
  const std::set<std::string> &loaded_;
  llvm::DenseMap<Operation *, bool> memo_;
};

}  // namespace

GateCut gateCut(const KernelContext &k, const OpList &fullOps, const std::set<std::string> &loaded) {
  Cut cut(k, loaded);
  // The frontier: computable values that the rest of the step reads.
  llvm::SetVector<Operation *> slots;
  for (Operation *user : fullOps)
    if (!cut.computable(user))
      for (Operation *def : cut.stepOperands(user)) slots.insert(def);
  // Stash floats only (a comparison's i1 goes by its operands), and spend fewer slots where an
  // arithmetic value's operands take fewer: 1 - sigmoid(k) beside sigmoid(k) is one subtraction.
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *op : slots) {
      if (llvm::isa<scan::InputOp>(op)) continue;
      bool isFloat = op->getResult(0).getType().isF32();
      if (isFloat && opInstructions(op) >= kTranscendentalInstructions) continue;
      llvm::SetVector<Operation *> fewer = slots;
      fewer.remove(op);
      for (Operation *def : cut.stepOperands(op)) fewer.insert(def);
      if (isFloat && fewer.size() >= slots.size()) continue;
      slots = std::move(fewer);
      changed = true;
      break;
    }
  }
  GateCut result;
  OpSet leaves;
  for (Operation *op : fullOps)
    if (slots.contains(op) && !llvm::isa<scan::InputOp>(op)) leaves.insert(op), result.leaves.push_back(op);
  // The transcendental functions the reverse walk no longer computes: read from the stash, or
  // needed only by what it reads.
  OpSet computed;
  for (Operation *op : liveOps(fullOps, Mode::Full, leaves))
    if (!leaves.count(op)) computed.insert(op);
  if (llvm::none_of(fullOps, [&](Operation *op) {
        return !computed.count(op) && opInstructions(op) >= kTranscendentalInstructions;
      }))
    return {};
  // The recompute walk evaluates the leaves and what they need.
  OpSet needed(leaves.begin(), leaves.end());
  for (auto it = fullOps.rbegin(); it != fullOps.rend(); ++it)
    if (needed.count(*it))
      for (Operation *def : cut.stepOperands(*it)) needed.insert(def);
  for (Operation *op : fullOps)
    if (needed.count(op)) result.ops.push_back(op);
  return result;
}

}  // namespace scanforge::cuda
