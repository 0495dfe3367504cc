#include "compiler/mlir/Target/Cuda/StepCost.h"

#include <map>

#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace scanforge::cuda {

namespace {

namespace arith = mlir::arith;
namespace math = mlir::math;

bool isSoftplusDifference(mlir::Operation *op) {
  auto sigmoid = llvm::dyn_cast<scan::SigmoidOp>(op);
  return sigmoid && scan::softplusDifference(sigmoid);
}

// The softplus values, their difference and its negation that only sigmoid(softplus(a) -
// softplus(b)) reads: the prelude computes that from a and b, and NVRTC drops them.
bool absorbed(mlir::Operation *op) {
  auto readers = [&](auto &&pred) {
    return !op->use_empty() && llvm::all_of(op->getUsers(), [&](mlir::Operation *u) { return pred(u); });
  };
  if (llvm::isa<arith::NegFOp>(op))
    return op->getOperand(0).getDefiningOp<arith::SubFOp>() && readers(isSoftplusDifference);
  if (llvm::isa<arith::SubFOp>(op))
    return readers([](mlir::Operation *u) { return isSoftplusDifference(u) || (llvm::isa<arith::NegFOp>(u) && absorbed(u)); });
  if (llvm::isa<scan::SoftplusOp>(op))
    return readers([](mlir::Operation *u) { return llvm::isa<arith::SubFOp>(u) && absorbed(u); });
  return false;
}

}  // namespace

int opInstructions(mlir::Operation *op) {
  if (absorbed(op)) return 0;
  if (isSoftplusDifference(op)) return 30;  // three FMUL + MUFU.EX2, MUFU.RCP, selects
  return llvm::TypeSwitch<mlir::Operation *, int>(op)
      .Case<arith::ConstantOp>([](auto) { return 0; })
      .Case<arith::DivFOp>([](auto) { return 10; })                        // IEEE division's fast path
      .Case<arith::MaximumFOp, arith::MinimumFOp>([](auto) { return 3; })  // NaN-propagating
      .Case<math::ExpOp>([](auto) { return 10; })                          // clamp, expf: 6 + MUFU.EX2
      .Case<math::LogOp, math::TanhOp>([](auto) { return 20; })
      .Case<math::SqrtOp>([](auto) { return 12; })
      .Case<scan::SigmoidOp>([](auto) { return 14; })                      // MUFU.EX2 + MUFU.RCP + select
      .Case<scan::SoftplusOp>([](auto) { return 26; })                     // + the log1p polynomial
      .Case<scan::GOp>([](auto) { return 16; })
      // A tensor element read or written per step: 64-bit address arithmetic, the step's guard,
      // the load or store itself. With it minGRU's forward estimate, 61, meets its SASS hot loop
      // per step (65 at sm_90: 1040 instructions per batch of 16 steps).
      .Case<scan::InputOp, scan::SavedOp, scan::OutputOp>([](auto) { return 9; })
      .Default([](mlir::Operation *) { return 1; });
}

std::string stepInstructions(const KernelContext &k) {
  std::map<std::string, int> byRegisterCount;  // register elements (a formula) -> instructions
  auto add = [&](const OpList &ops, const ValuePrinter &values) {
    for (mlir::Operation *op : ops) {
      if (!op->getNumResults() && !op->getNumOperands()) continue;
      mlir::Value v = op->getNumResults() ? op->getResult(0) : op->getOperand(op->getNumOperands() - 1);
      byRegisterCount[k.exprs.formulaRegisterCount(values.dimsOf(v))] += opInstructions(op);
      // A sum over the lane dimension adds across the lanes too: a shuffle and an add per step of
      // the butterfly, for each element of the result.
      if (auto sum = llvm::dyn_cast<scan::SumOp>(op); sum && k.exprs.laneDim() >= 0 &&
                                                      values.dimsOf(sum.getOperand()) & ~values.dimsOf(v) & k.exprs.laneMask())
        byRegisterCount[(values.dimsOf(v) & k.exprs.registerDims() ? k.exprs.formulaRegisterCount(values.dimsOf(v)) + "*" : "") +
                        "2*log2($LANES)"] += 1;
    }
  };
  add(k.fullOps, k.values);
  if (!k.recomputed.empty() && k.fwdValues) add(k.recomputeOps, *k.fwdValues);
  std::string formula;
  for (auto &[count, instructions] : byRegisterCount) {
    if (instructions == 0) continue;
    formula += (formula.empty() ? "" : "+") + std::to_string(instructions) + (count == "1" ? "" : "*(" + count + ")");
  }
  return formula.empty() ? "0" : formula;
}

}  // namespace scanforge::cuda
