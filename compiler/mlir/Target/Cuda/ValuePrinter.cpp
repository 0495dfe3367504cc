#include "compiler/mlir/Target/Cuda/ValuePrinter.h"

#include <cmath>
#include <cstring>
#include <iomanip>

#include "llvm/ADT/TypeSwitch.h"

namespace scanforge::cuda {

namespace arith = mlir::arith;
namespace math = mlir::math;

std::string floatLiteral(float value) {
  if (!std::isfinite(value)) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    std::ostringstream os;
    os << "__int_as_float(0x" << std::hex << bits << ")";
    return os.str();
  }
  std::ostringstream os;
  os << std::setprecision(9) << value;
  std::string text = os.str();
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text + "f";
}

ValuePrinter::ValuePrinter(scan::RecurrenceOp rec, const scan::DimAnalysis &dims, const DimExprs &exprs,
                           std::string prefix)
    : dims_(dims), exprs_(exprs), prefix_(std::move(prefix)) {
  int n = 0;
  for (mlir::Operation &op : rec.getBodyBlock())
    for (mlir::Value result : op.getResults()) numbers_[result] = n++;
}

std::string ValuePrinter::var(mlir::Value v) const { return prefix_ + std::to_string(numbers_.lookup(v)); }

std::string ValuePrinter::element(mlir::Value v) const {
  std::string index = exprs_.registerIndex(dimsOf(v));
  return index.empty() ? var(v) : var(v) + "[" + index + "]";
}

void ValuePrinter::declare(CodeWriter &w, mlir::Value v) const {
  std::string type = v.getType().isInteger(1) ? "bool " : "float ";
  DimMask regs = dimsOf(v) & exprs_.registerDims();
  w.line(type + var(v) + (regs ? "[" + exprs_.registerCount(regs) + "]" : "") + ";");
}

void ValuePrinter::forEachRegister(CodeWriter &w, DimMask mask, const std::function<void(CodeWriter &)> &body) const {
  std::vector<int> dims = exprs_.dimsOf(mask & exprs_.registerDims());
  for (int d : dims) {
    std::string r = exprs_.regIndexExpr(d);
    w.line("#pragma unroll");
    w.open("for (int " + r + " = 0; " + r + " < " + exprs_.regSizeExpr(d) + "; ++" + r + ")");
    if (d == exprs_.laneDim()) w.line("[[maybe_unused]] const int " + exprs_.indexExpr(d) + " = " + r + " * SF_LANES + sf_lane;");
  }
  body(w);
  for (size_t i = 0; i < dims.size(); ++i) w.close();
}

void ValuePrinter::assign(CodeWriter &w, mlir::Value v, const std::function<std::string()> &expr) const {
  if (!(dimsOf(v) & exprs_.registerDims())) {
    w.line(std::string(v.getType().isInteger(1) ? "const bool " : "const float ") + var(v) + " = " + expr() + ";");
    return;
  }
  declare(w, v);
  forEachRegister(w, dimsOf(v), [&](CodeWriter &inner) { inner.line(element(v) + " = " + expr() + ";"); });
}

bool ValuePrinter::isMath(mlir::Operation *op) {
  return llvm::isa<arith::ConstantOp, arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp, arith::NegFOp,
                   arith::MaximumFOp, arith::MinimumFOp, arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::CmpFOp,
                   arith::SelectOp, math::ExpOp, math::LogOp, math::TanhOp, math::SqrtOp, math::AbsFOp,
                   scan::SigmoidOp, scan::SoftplusOp, scan::GOp, scan::SumOp>(op);
}

mlir::LogicalResult ValuePrinter::verifySupported(mlir::Operation *op) {
  if (auto next = llvm::dyn_cast<scan::NextOp>(op))
    return next.emitError() << "state '" << next.getName()
                            << "' is not in affine form; the CUDA backend compiles recurrences after --scan-compile "
                               "(or --scan-extract-affine)";
  if (llvm::isa<scan::InputOp, scan::ParamOp, scan::PrevOp, scan::SavedOp, scan::UpdateOp, scan::OutputOp,
                scan::AccumOp>(op))
    return mlir::success();
  if (auto c = llvm::dyn_cast<arith::ConstantOp>(op)) {
    bool ok = llvm::isa<mlir::FloatAttr>(c.getValue()) ||
              (llvm::isa<mlir::IntegerAttr>(c.getValue()) && c.getType().isInteger(1));
    if (!ok) return op->emitError() << "the CUDA backend supports f32 and i1 constants only, not " << c.getValue();
    return mlir::success();
  }
  if (llvm::isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(op) && !op->getResult(0).getType().isInteger(1))
    return op->emitError() << "the CUDA backend supports '" << op->getName() << "' on i1 only";
  if (!isMath(op)) return op->emitError() << "the CUDA backend does not know '" << op->getName() << "'";
  return mlir::success();
}

void ValuePrinter::printMath(CodeWriter &w, mlir::Operation *op) const {
  if (auto c = llvm::dyn_cast<arith::ConstantOp>(op)) {
    if (auto f = llvm::dyn_cast<mlir::FloatAttr>(c.getValue()))
      w.line("const float " + var(c) + " = " + floatLiteral(static_cast<float>(f.getValueAsDouble())) + ";");
    else
      w.line("const bool " + var(c) + " = " +
             (llvm::cast<mlir::IntegerAttr>(c.getValue()).getValue().getBoolValue() ? "true" : "false") + ";");
    return;
  }
  if (auto sum = llvm::dyn_cast<scan::SumOp>(op)) return printSum(w, sum);
  assign(w, op->getResult(0), [&] { return mathExpr(op); });
}

std::string ValuePrinter::mathExpr(mlir::Operation *op) const {
  auto x = [&](unsigned i) { return element(op->getOperand(i)); };
  auto call = [&](const char *fn) { return std::string(fn) + "(" + x(0) + ")"; };
  auto binary = [&](const char *sym) { return x(0) + " " + sym + " " + x(1); };
  using P = arith::CmpFPredicate;
  return llvm::TypeSwitch<mlir::Operation *, std::string>(op)
      .Case<arith::AddFOp>([&](auto) { return binary("+"); })
      .Case<arith::SubFOp>([&](auto) { return binary("-"); })
      .Case<arith::MulFOp>([&](auto) { return binary("*"); })
      .Case<arith::DivFOp>([&](auto) { return binary("/"); })
      .Case<arith::NegFOp>([&](auto) { return "-" + x(0); })
      .Case<arith::MaximumFOp>([&](auto) { return "sf_maximum(" + x(0) + ", " + x(1) + ")"; })
      .Case<arith::MinimumFOp>([&](auto) { return "sf_minimum(" + x(0) + ", " + x(1) + ")"; })
      .Case<arith::AndIOp>([&](auto) { return binary("&&"); })
      .Case<arith::OrIOp>([&](auto) { return binary("||"); })
      .Case<arith::XOrIOp>([&](auto) { return binary("!="); })
      .Case<arith::SelectOp>([&](auto) { return x(0) + " ? " + x(1) + " : " + x(2); })
      .Case<arith::CmpFOp>([&](arith::CmpFOp cmp) -> std::string {
        std::string a = x(0), b = x(1);
        switch (cmp.getPredicate()) {
          case P::OEQ: return a + " == " + b;
          case P::ONE: return "(" + a + " < " + b + " || " + a + " > " + b + ")";
          case P::OLT: return a + " < " + b;
          case P::OLE: return a + " <= " + b;
          case P::OGT: return a + " > " + b;
          case P::OGE: return a + " >= " + b;
          case P::UEQ: return "!(" + a + " < " + b + " || " + a + " > " + b + ")";
          case P::UNE: return a + " != " + b;
          case P::ULT: return "!(" + a + " >= " + b + ")";
          case P::ULE: return "!(" + a + " > " + b + ")";
          case P::UGT: return "!(" + a + " <= " + b + ")";
          case P::UGE: return "!(" + a + " < " + b + ")";
          case P::ORD: return "(" + a + " == " + a + " && " + b + " == " + b + ")";
          case P::UNO: return "(" + a + " != " + a + " || " + b + " != " + b + ")";
          case P::AlwaysTrue: return "true";
          case P::AlwaysFalse: return "false";
        }
        return "false";
      })
      .Case<math::ExpOp>([&](auto) { return call("sf_exp"); })
      .Case<math::LogOp>([&](auto) { return call("logf"); })
      .Case<math::TanhOp>([&](auto) { return call("tanhf"); })
      .Case<math::SqrtOp>([&](auto) { return call("sqrtf"); })
      .Case<math::AbsFOp>([&](auto) { return call("fabsf"); })
      .Case<scan::SigmoidOp>([&](scan::SigmoidOp sigmoid) {
        if (auto ab = scan::softplusDifference(sigmoid))  // its softplus and subtraction are left dead
          return "sf_sigmoid_softplus_difference(" + element(ab->first) + ", " + element(ab->second) + ")";
        return call("sf_sigmoid");
      })
      .Case<scan::SoftplusOp>([&](auto) { return call("sf_softplus"); })
      .Case<scan::GOp>([&](auto) { return call("sf_g"); });
}

void ValuePrinter::printSum(CodeWriter &w, scan::SumOp sum) const {
  int dim = dims_.table().index(sum.getDim());
  mlir::Value result = sum.getResult(), operand = sum.getOperand();
  if (exprs_.isChannel(dim)) {
    // The thread's own term of a sum over threads: outputs and gradients add the terms later.
    assign(w, result, [&] { return element(operand); });
    return;
  }
  bool scalar = !(dimsOf(result) & exprs_.registerDims());
  if (scalar) {
    w.line("float " + var(result) + " = 0.0f;");
  } else {
    declare(w, result);
    forEachRegister(w, dimsOf(result), [&](CodeWriter &inner) { inner.line(element(result) + " = 0.0f;"); });
  }
  forEachRegister(w, dimsOf(operand), [&](CodeWriter &inner) { inner.line(element(result) + " += " + element(operand) + ";"); });
  if (dim != exprs_.laneDim()) return;
  // The lanes' sums, added across the lanes in a butterfly: every lane ends with the whole sum, in
  // the same bits (each addition meets the same two operands, in either order).
  forEachRegister(w, dimsOf(result), [&](CodeWriter &inner) {
    inner.line("#pragma unroll");
    inner.line("for (int sf_o = 1; sf_o < SF_LANES; sf_o <<= 1) " + element(result) + " += __shfl_xor_sync(0xffffffffu, " +
               element(result) + ", sf_o);");
  });
}

}  // namespace scanforge::cuda
