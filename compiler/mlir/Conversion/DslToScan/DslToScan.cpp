#include "compiler/mlir/Conversion/DslToScan/DslToScan.h"

#include "compiler/mlir/Dialect/Scan/IR/ScanBuilder.h"
#include "mlir/IR/Builders.h"

namespace scanforge::scan {
namespace {

using mlir::Value;
using P = mlir::arith::CmpFPredicate;

class Lowering {
 public:
  Lowering(const dsl::Recurrence &rec, const std::string &path, mlir::OpBuilder &builder)
      : rec_(rec), path_(path), b_(builder) {}

  void run() {
    llvm::SmallVector<llvm::StringRef> dims;
    for (const std::string &d : rec_.checked.dims) dims.push_back(d);
    auto op = b_.create<RecurrenceOp>(loc(rec_.name.range), b_.getStringAttr(rec_.name.name), b_.getStrArrayAttr(dims),
                                      rec_.reverse ? b_.getUnitAttr() : mlir::UnitAttr(), mlir::FlatSymbolRefAttr());
    op.getBody().emplaceBlock();
    mlir::OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(&op.getBodyBlock());

    for (const dsl::Port &in : rec_.inputs)
      inputs_.push_back(b_.create<InputOp>(loc(in.name.range), f32(), b_.getStringAttr(in.name.name), dimAttr(in.dimIds),
                                           storage(in.type), /*adjoint_of=*/nullptr));
    for (const dsl::Port &p : rec_.params)
      params_.push_back(b_.create<ParamOp>(loc(p.name.range), f32(), b_.getStringAttr(p.name.name), dimAttr(p.dimIds)));
    for (const dsl::StateInfo &s : rec_.checked.states)
      prev_.push_back(b_.create<PrevOp>(loc(rec_.body[s.stmt].target.range), f32(), b_.getStringAttr(s.name),
                                        dimAttr(s.dims), /*adjoint_of=*/nullptr));
    stmtValues_.resize(rec_.body.size());
    stateValues_.resize(rec_.checked.states.size());
    for (size_t i = 0; i < rec_.body.size(); ++i) lowerStatement(rec_.body[i], i);
  }

 private:
  mlir::Location loc(const dsl::SourceRange &range) {
    return mlir::FileLineColLoc::get(b_.getContext(), path_, range.begin.line, range.begin.col);
  }
  mlir::Type f32() { return b_.getF32Type(); }
  mlir::TypeAttr storage(dsl::ElemType type) {
    return type == dsl::ElemType::BF16 ? mlir::TypeAttr::get(b_.getBF16Type()) : mlir::TypeAttr();
  }
  mlir::ArrayAttr dimAttr(const dsl::DimSet &ids) {
    llvm::SmallVector<llvm::StringRef> names;
    for (int id : ids) names.push_back(rec_.checked.dims[id]);
    return b_.getStrArrayAttr(names);
  }

  void lowerStatement(const dsl::Stmt &stmt, size_t index) {
    Value value = lower(*stmt.value);
    mlir::Location at = loc(stmt.target.range);
    if (stmt.kind == dsl::Stmt::Kind::State) {
      const dsl::StateInfo &state = rec_.checked.states[stmt.state];
      value = b_.create<NextOp>(at, f32(), b_.getStringAttr(state.name), dimAttr(state.dims), value, /*adjoint_of=*/nullptr);
      stateValues_[stmt.state] = value;
    }
    stmtValues_[index] = value;
    if (stmt.output >= 0) {
      const dsl::Port &out = rec_.outputs[stmt.output];
      b_.create<OutputOp>(at, b_.getStringAttr(out.name.name), dimAttr(out.dimIds), value, storage(out.type),
                          /*adjoint_of=*/nullptr);
    }
  }

  Value lower(const dsl::Expr &e) {
    MathBuilder m(b_, loc(e.range));
    switch (e.kind) {
      case dsl::Expr::Kind::Number: return m.constant(e.number);
      case dsl::Expr::Kind::Name: return lowerName(e);
      case dsl::Expr::Kind::Unary: {
        Value x = lower(*e.args[0]);
        return e.unary == dsl::UnaryOp::Neg ? m.neg(x) : b_.create<mlir::arith::XOrIOp>(m.loc(), x, m.boolean(true));
      }
      case dsl::Expr::Kind::Binary: return lowerBinary(e, m);
      case dsl::Expr::Kind::Call: return lowerCall(e, m);
      case dsl::Expr::Kind::Sum: return m.sum(lower(*e.args[0]), e.text);
    }
    return {};
  }

  Value lowerName(const dsl::Expr &e) {
    switch (e.ref.kind) {
      case dsl::NameRef::Input: return inputs_[e.ref.index];
      case dsl::NameRef::Param: return params_[e.ref.index];
      case dsl::NameRef::Local: return stmtValues_[e.ref.index];
      case dsl::NameRef::StatePrev: return prev_[e.ref.index];
      case dsl::NameRef::StateCur: return stateValues_[e.ref.index];
      case dsl::NameRef::Unresolved: break;
    }
    return {};
  }

  Value lowerBinary(const dsl::Expr &e, MathBuilder &m) {
    Value x = lower(*e.args[0]);
    Value y = lower(*e.args[1]);
    switch (e.binary) {
      case dsl::BinaryOp::Add: return m.add(x, y);
      case dsl::BinaryOp::Sub: return m.sub(x, y);
      case dsl::BinaryOp::Mul: return m.mul(x, y);
      case dsl::BinaryOp::Div: return m.div(x, y);
      case dsl::BinaryOp::Lt: return m.cmp(P::OLT, x, y);
      case dsl::BinaryOp::Le: return m.cmp(P::OLE, x, y);
      case dsl::BinaryOp::Gt: return m.cmp(P::OGT, x, y);
      case dsl::BinaryOp::Ge: return m.cmp(P::OGE, x, y);
      case dsl::BinaryOp::Eq: return m.cmp(P::OEQ, x, y);
      case dsl::BinaryOp::Ne: return m.cmp(P::UNE, x, y);
      case dsl::BinaryOp::And: return b_.create<mlir::arith::AndIOp>(m.loc(), x, y);
      case dsl::BinaryOp::Or: return b_.create<mlir::arith::OrIOp>(m.loc(), x, y);
    }
    return {};
  }

  Value lowerCall(const dsl::Expr &e, MathBuilder &m) {
    llvm::SmallVector<Value> args;
    for (const dsl::ExprPtr &a : e.args) args.push_back(lower(*a));
    mlir::Location at = m.loc();
    switch (e.builtin) {
      case dsl::Builtin::Sigmoid: return m.sigmoid(args[0]);
      case dsl::Builtin::Softplus: return b_.create<SoftplusOp>(at, args[0]);
      case dsl::Builtin::Exp: return b_.create<mlir::math::ExpOp>(at, args[0]);
      case dsl::Builtin::Log: return b_.create<mlir::math::LogOp>(at, args[0]);
      case dsl::Builtin::Tanh: return b_.create<mlir::math::TanhOp>(at, args[0]);
      case dsl::Builtin::Relu: return b_.create<mlir::arith::MaximumFOp>(at, args[0], m.constant(0.0));
      case dsl::Builtin::Silu: return m.mul(args[0], m.sigmoid(args[0]));
      case dsl::Builtin::G: return b_.create<GOp>(at, args[0]);
      case dsl::Builtin::Abs: return b_.create<mlir::math::AbsFOp>(at, args[0]);
      case dsl::Builtin::Sqrt: return b_.create<mlir::math::SqrtOp>(at, args[0]);
      case dsl::Builtin::Min: return b_.create<mlir::arith::MinimumFOp>(at, args[0], args[1]);
      case dsl::Builtin::Max: return b_.create<mlir::arith::MaximumFOp>(at, args[0], args[1]);
      case dsl::Builtin::Where: return lowerWhere(e, args, m);
    }
    return {};
  }

  // A where whose condition is built from literals alone folds (canonicalisation) to the branch it
  // picks, and that branch may lack dimensions the where has: where(1 < 2, p, x) with p[] and x[d]
  // is p, without d, and a sum over d of it no longer verifies (scan-fuzz seed 61054). Each branch
  // lacking some is multiplied by a 1 with the other's dimensions, so whichever is picked keeps
  // them all. A condition that reads a port is never folded, so its branches stay as written.
  Value lowerWhere(const dsl::Expr &e, llvm::ArrayRef<Value> args, MathBuilder &m) {
    Value a = args[1], b = args[2];
    if (literalsOnly(*e.args[0])) {
      if (e.args[1]->dims.size() < e.dims.size()) a = m.mul(args[1], m.onesLike(args[2]));
      if (e.args[2]->dims.size() < e.dims.size()) b = m.mul(args[2], m.onesLike(args[1]));
    }
    return m.select(args[0], a, b);
  }

  static bool literalsOnly(const dsl::Expr &e) {
    if (e.kind == dsl::Expr::Kind::Name) return false;
    return llvm::all_of(e.args, [](const dsl::ExprPtr &a) { return literalsOnly(*a); });
  }

  const dsl::Recurrence &rec_;
  const std::string &path_;
  mlir::OpBuilder &b_;
  llvm::SmallVector<Value> inputs_, params_, prev_, stmtValues_, stateValues_;
};

}  // namespace

mlir::OwningOpRef<mlir::ModuleOp> lowerToScan(const dsl::Module &module, const std::string &path,
                                              mlir::MLIRContext &context) {
  context.loadDialect<ScanDialect, mlir::arith::ArithDialect, mlir::math::MathDialect>();
  mlir::OpBuilder builder(&context);
  auto top = mlir::ModuleOp::create(mlir::FileLineColLoc::get(&context, path, 1, 1));
  builder.setInsertionPointToEnd(top.getBody());
  for (const dsl::Recurrence &rec : module.recurrences) Lowering(rec, path, builder).run();
  return top;
}

}  // namespace scanforge::scan
