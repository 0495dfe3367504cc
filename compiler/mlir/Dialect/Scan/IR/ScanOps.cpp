#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"

#include <map>
#include <set>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;

#include "compiler/mlir/Dialect/Scan/IR/ScanOpsDialect.cpp.inc"
#include "compiler/mlir/Dialect/Scan/IR/ScanInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "compiler/mlir/Dialect/Scan/IR/ScanOps.cpp.inc"

namespace scanforge::scan {

void ScanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "compiler/mlir/Dialect/Scan/IR/ScanOps.cpp.inc"
      >();
}

void registerScanDialects(DialectRegistry &registry) {
  registry.insert<ScanDialect, arith::ArithDialect, math::MathDialect>();
}

// ---- op verifiers ----

std::optional<std::pair<Value, Value>> softplusDifference(SigmoidOp sigmoid) {
  Value x = sigmoid.getOperand();
  auto neg = x.getDefiningOp<arith::NegFOp>();
  if (neg) x = neg.getOperand();
  auto sub = x.getDefiningOp<arith::SubFOp>();
  auto a = sub ? sub.getLhs().getDefiningOp<SoftplusOp>() : nullptr;
  auto b = sub ? sub.getRhs().getDefiningOp<SoftplusOp>() : nullptr;
  if (!a || !b) return std::nullopt;
  if (neg) return std::make_pair(b.getOperand(), a.getOperand());
  return std::make_pair(a.getOperand(), b.getOperand());
}

static LogicalResult verifyDimList(Operation *op, ArrayAttr dims) {
  std::set<StringRef> seen;
  for (Attribute attr : dims) {
    StringRef dim = llvm::cast<StringAttr>(attr).getValue();
    if (dim.empty()) return op->emitOpError() << "has an empty dimension name";
    if (!seen.insert(dim).second) return op->emitOpError() << "lists dimension '" << dim << "' twice";
  }
  return success();
}

static LogicalResult verifyStorage(Operation *op, std::optional<Type> storage) {
  if (storage && !storage->isF32() && !storage->isBF16())
    return op->emitOpError() << "storage type must be f32 or bf16, not " << *storage;
  return success();
}

static LogicalResult verifyPortName(Operation *op, StringRef name) {
  if (name.empty()) return op->emitOpError() << "needs a non-empty name";
  return success();
}

// A port that stands for the adjoint of a forward port belongs to a backward recurrence.
static LogicalResult verifyAdjoint(Operation *op, std::optional<StringRef> adjointOf) {
  if (!adjointOf) return success();
  if (adjointOf->empty()) return op->emitOpError() << "has an empty 'adjoint_of'";
  auto rec = op->getParentOfType<RecurrenceOp>();
  if (rec && !rec.getAdjointOf())
    return op->emitOpError() << "is the adjoint of '" << *adjointOf
                             << "', so it belongs in a backward recurrence (one with 'adjoint_of')";
  return success();
}

LogicalResult InputOp::verify() {
  if (failed(verifyPortName(*this, getName())) || failed(verifyAdjoint(*this, getAdjointOf())) || failed(verifyDimList(*this, getDims()))) return failure();
  return verifyStorage(*this, getStorage());
}
LogicalResult ParamOp::verify() {
  if (failed(verifyPortName(*this, getName()))) return failure();
  return verifyDimList(*this, getDims());
}
LogicalResult PrevOp::verify() {
  if (failed(verifyPortName(*this, getName())) || failed(verifyAdjoint(*this, getAdjointOf()))) return failure();
  return verifyDimList(*this, getDims());
}
LogicalResult SavedOp::verify() {
  if (failed(verifyPortName(*this, getName()))) return failure();
  if (!(*this)->getParentOfType<RecurrenceOp>().getAdjointOf())
    return emitOpError() << "reads a forward state, so it belongs in a backward recurrence (one with 'adjoint_of')";
  return verifyDimList(*this, getDims());
}
LogicalResult NextOp::verify() {
  if (failed(verifyPortName(*this, getName())) || failed(verifyAdjoint(*this, getAdjointOf()))) return failure();
  return verifyDimList(*this, getDims());
}
LogicalResult UpdateOp::verify() {
  if (failed(verifyPortName(*this, getName())) || failed(verifyAdjoint(*this, getAdjointOf()))) return failure();
  return verifyDimList(*this, getDims());
}
LogicalResult OutputOp::verify() {
  if (failed(verifyPortName(*this, getName())) || failed(verifyAdjoint(*this, getAdjointOf())) || failed(verifyDimList(*this, getDims()))) return failure();
  return verifyStorage(*this, getStorage());
}
LogicalResult AccumOp::verify() {
  if (failed(verifyPortName(*this, getName())) || failed(verifyAdjoint(*this, getAdjointOf()))) return failure();
  return verifyDimList(*this, getDims());
}

// ---- the recurrence ----

namespace {

// Checks that each port name is declared once per kind, and that ports of one state agree.
class PortChecker {
 public:
  explicit PortChecker(RecurrenceOp rec) : rec_(rec) {}

  LogicalResult unique(Operation *op, StringRef kind, StringRef name) {
    auto [it, fresh] = seen_[kind.str()].emplace(name.str(), op);
    if (fresh) return success();
    return op->emitOpError() << "declares " << kind << " '" << name << "' a second time";
  }

  LogicalResult stateDims(Operation *op, StringRef name, ArrayAttr dims) {
    auto [it, fresh] = stateDims_.emplace(name.str(), dims);
    if (fresh || it->second == dims) return success();
    return op->emitOpError() << "gives state '" << name << "' dimensions " << dims << ", but it has " << it->second;
  }

  LogicalResult finish() {
    for (auto &[name, op] : seen_["a state read"])
      if (!seen_["a state update"].count(name))
        return op->emitOpError() << "reads state '" << name << "', which is never updated";
    for (auto &[name, op] : seen_["an input"])
      if (seen_["a parameter"].count(name))
        return op->emitOpError() << "uses the name '" << name << "' for both an input and a parameter";
    return success();
  }

 private:
  RecurrenceOp rec_;
  std::map<std::string, std::map<std::string, Operation *>> seen_;
  std::map<std::string, ArrayAttr> stateDims_;
};

bool allowedInBody(Operation &op) {
  Dialect *dialect = op.getDialect();
  if (!dialect || op.getNumRegions() != 0 || op.getNumResults() > 1) return false;
  if (llvm::isa<RecurrenceOp>(op)) return false;
  StringRef ns = dialect->getNamespace();
  return ns == "scan" || ns == "arith" || ns == "math";
}

}  // namespace

LogicalResult RecurrenceOp::verifyRegions() {
  PortChecker ports(*this);
  llvm::DenseSet<Value> readsState;
  for (Operation &op : getBodyBlock()) {
    if (!allowedInBody(op))
      return op.emitOpError() << "is not allowed in a scan.recurrence body (only scan, arith and math ops "
                                 "without regions and with at most one result)";
    for (Type type : op.getResultTypes())
      if (!type.isF32() && !type.isInteger(1))
        return op.emitOpError() << "produces " << type << "; values in a recurrence are f32 (or i1 conditions)";

    LogicalResult ok = success();
    if (auto in = llvm::dyn_cast<InputOp>(op)) ok = ports.unique(&op, "an input", in.getName());
    else if (auto p = llvm::dyn_cast<ParamOp>(op)) ok = ports.unique(&op, "a parameter", p.getName());
    else if (auto s = llvm::dyn_cast<SavedOp>(op)) ok = ports.unique(&op, "a saved state", s.getName());
    else if (auto out = llvm::dyn_cast<OutputOp>(op)) ok = ports.unique(&op, "an output", out.getName());
    else if (auto acc = llvm::dyn_cast<AccumOp>(op)) ok = ports.unique(&op, "an accumulated gradient", acc.getName());
    else if (auto prev = llvm::dyn_cast<PrevOp>(op)) {
      ok = succeeded(ports.unique(&op, "a state read", prev.getName())) ? ports.stateDims(&op, prev.getName(), prev.getDims())
                                                                       : failure();
      readsState.insert(prev.getResult());
    } else if (llvm::isa<NextOp, UpdateOp>(op)) {
      auto port = llvm::cast<PortOpInterface>(op);
      StringRef name = port.getName();
      ArrayAttr dims = port.getDims();
      ok = succeeded(ports.unique(&op, "a state update", name)) ? ports.stateDims(&op, name, dims) : failure();
      readsState.insert(op.getResult(0));
      if (auto update = llvm::dyn_cast<UpdateOp>(op)) {
        for (Value coeff : {update.getA(), update.getB()})
          if (readsState.contains(coeff))
            return update.emitOpError() << "coefficient of state '" << name
                                        << "' depends on a state; a and b may depend on inputs and parameters only";
      }
    } else {
      for (Value operand : op.getOperands())
        if (readsState.contains(operand)) {
          for (Value res : op.getResults()) readsState.insert(res);
          break;
        }
    }
    if (failed(ok)) return failure();
  }
  if (failed(ports.finish())) return failure();
  return DimAnalysis::compute(*this);
}

}  // namespace scanforge::scan
