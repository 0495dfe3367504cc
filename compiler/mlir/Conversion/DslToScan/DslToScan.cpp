#include "compiler/mlir/Conversion/DslToScan/DslToScan.h"

#include <map>

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

  // A where has the dimensions of its condition and both branches, but canonicalisation folds it
  // to the branch it picks once the condition folds to a constant, and that branch may lack some:
  // a sum over one of them then no longer verifies (scan-fuzz seed 61054: where(2 != 0.5, p1, x0)
  // with p1[] and x0[d]; likewise where(x0 > 0 || 1 < 2, p1, x0)). So where the condition may fold,
  // a branch lacking dimensions is multiplied by a 1 with those of the other branch and of the
  // values the condition compares (lowered again; CSE merges the copies).
  // Equal branches fold as well (select(c, x, x) is x; CSE makes equal branches one value), so a
  // where whose condition has dimensions neither branch has is widened too (scan-fuzz seed 68134:
  // where(x0 != 0.75, p0, p0) with x0[d], p0[n], summed over d).
  Value lowerWhere(const dsl::Expr &e, llvm::ArrayRef<Value> args, MathBuilder &m) {
    Value a = args[1], b = args[2];
    auto has = [](const dsl::DimSet &dims, int d) { return llvm::is_contained(dims, d); };
    bool conditionOnly = llvm::any_of(e.dims, [&](int d) { return !has(e.args[1]->dims, d) && !has(e.args[2]->dims, d); });
    if (!conditionOnly && !mayFoldToConstant(*e.args[0])) return m.select(args[0], a, b);
    llvm::SmallVector<Value> compared;
    comparedValues(*e.args[0], compared);
    auto widen = [&](Value branch, Value other) {
      Value ones = m.onesLike(other);
      for (Value c : compared) ones = m.mul(ones, m.onesLike(c));
      return m.mul(branch, ones);
    };
    if (e.args[1]->dims.size() < e.dims.size()) a = widen(args[1], args[2]);
    if (e.args[2]->dims.size() < e.dims.size()) b = widen(args[2], args[1]);
    return m.select(args[0], a, b);
  }

  // Whether canonicalisation may fold e to a constant: it reads no port or state, or a constant
  // decides it (`c || 1 < 2`, a where whose condition and picked branch may fold). Conservative.
  // A local's answer is kept: walking a local each time it is named took time exponential in the
  // depth of locals that name their predecessor twice (z1 = z0 * z0, ...: 28 s at 30 of them).
  bool mayFoldToConstant(const dsl::Expr &e) {
    auto may = [&](size_t i) { return mayFoldToConstant(*e.args[i]); };
    switch (e.kind) {
      case dsl::Expr::Kind::Number: return true;
      case dsl::Expr::Kind::Name: {
        if (e.ref.kind != dsl::NameRef::Local) return false;
        auto [known, fresh] = localMayFold_.try_emplace(e.ref.index, false);
        if (fresh) known->second = mayFoldToConstant(*rec_.body[e.ref.index].value);
        return known->second;
      }
      case dsl::Expr::Kind::Sum: return false;  // its operand has the summed dimension: it reads a port
      case dsl::Expr::Kind::Binary:
        if (e.binary == dsl::BinaryOp::And || e.binary == dsl::BinaryOp::Or) return may(0) || may(1);
        break;
      case dsl::Expr::Kind::Call:
        if (e.builtin == dsl::Builtin::Where) return (may(0) && (may(1) || may(2))) || (may(1) && may(2));
        break;
      case dsl::Expr::Kind::Unary: break;
    }
    for (size_t i = 0; i < e.args.size(); ++i)
      if (!may(i)) return false;
    return true;
  }

  // The real values a condition compares, through &&, || and ! (booleans are never assigned).
  void comparedValues(const dsl::Expr &c, llvm::SmallVector<Value> &out) {
    if (c.kind == dsl::Expr::Kind::Unary || (c.kind == dsl::Expr::Kind::Binary && (c.binary == dsl::BinaryOp::And ||
                                                                                    c.binary == dsl::BinaryOp::Or))) {
      for (const dsl::ExprPtr &a : c.args) comparedValues(*a, out);
      return;
    }
    if (c.kind == dsl::Expr::Kind::Binary)
      for (const dsl::ExprPtr &a : c.args) out.push_back(lower(*a));
  }

  const dsl::Recurrence &rec_;
  const std::string &path_;
  mlir::OpBuilder &b_;
  llvm::SmallVector<Value> inputs_, params_, prev_, stmtValues_, stateValues_;
  std::map<size_t, bool> localMayFold_;  // mayFoldToConstant of each local statement asked about
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
