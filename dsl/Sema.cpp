#include "dsl/Sema.h"

#include <algorithm>
#include <map>
#include <set>

#include "dsl/Parser.h"

namespace scanforge::dsl {

std::string formatDims(const Recurrence &rec, const DimSet &dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += rec.checked.dims[dims[i]];
  }
  return out + "]";
}

namespace {

DimSet unite(const DimSet &a, const DimSet &b) {
  DimSet out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

bool isSubset(const DimSet &small, const DimSet &big) {
  return std::includes(big.begin(), big.end(), small.begin(), small.end());
}

DimSet sorted(DimSet dims) {
  std::sort(dims.begin(), dims.end());
  return dims;
}

std::string linearHint(const std::string &state) {
  return "a state update must have the form " + state + " = a * " + state +
         " + b, where a and b depend only on inputs and parameters";
}

// How an expression depends on the states: not at all, affinely on one state's previous value
// with state-free coefficients, or otherwise (with the reason, for the error message).
struct Dep {
  // A state read, with the first local it passes through on its way here (for the notes).
  struct Read {
    int state;
    SourceRange at;
    std::string via;
    SourceRange viaUse;
  };
  enum Kind { None, Affine, Other } kind = None;
  int state = -1;           // Affine: the state
  std::vector<Read> reads;  // every state read, with its first read
  SourceRange culprit;      // Other: where linearity breaks
  std::string reason;       // Other: why
  bool viaGate = false;     // Other: linearity broke inside a local (the gate), not here
  std::string gate;
  SourceRange gateUse;
};

class RecurrenceChecker {
 public:
  RecurrenceChecker(Recurrence &rec, DiagnosticEngine &diags) : rec_(rec), realDiags_(diags) {}

  void run() {
    declareDimensions();
    declarePorts();
    collectAssignments();
    discoverStates();
    inferStateDims();
    diags_ = &realDiags_;
    analyzeBody();
    checkOutputs();
    checkUnused();
  }

 private:
  // ---- declarations ----
  int dimIndex(const std::string &name) const {
    auto it = std::find(rec_.checked.dims.begin(), rec_.checked.dims.end(), name);
    return it == rec_.checked.dims.end() ? -1 : static_cast<int>(it - rec_.checked.dims.begin());
  }

  void declareDimensions() {
    auto declare = [&](std::vector<Port> &ports, bool mayIntroduce) {
      for (Port &port : ports) {
        std::set<std::string> seen;
        for (const Ident &dim : port.dims) {
          if (dim.name == "t" || dim.name == "b") {
            realDiags_.error(dim.range, "'" + dim.name + "' is the implicit " +
                                            (dim.name == "t" ? "time" : "batch") + " dimension and cannot be declared")
                .hint("inputs vary over (b, t) implicitly; list only their other dimensions, as in x[d]");
            continue;
          }
          if (!seen.insert(dim.name).second) {
            realDiags_.error(dim.range, "dimension '" + dim.name + "' appears twice in '" + port.name.name + "'");
            continue;
          }
          int id = dimIndex(dim.name);
          if (id < 0) {
            if (!mayIntroduce) {
              badOutputs_.insert(port.name.name);
              realDiags_
                  .error(dim.range, "dimension '" + dim.name + "' of output '" + port.name.name +
                                        "' is not a dimension of any input or parameter")
                  .hint("its size could not be known when the recurrence runs; outputs use the inputs' dimensions");
              continue;
            }
            id = static_cast<int>(rec_.checked.dims.size());
            rec_.checked.dims.push_back(dim.name);
          }
          port.dimIds.push_back(id);
        }
      }
    };
    declare(rec_.inputs, true);
    declare(rec_.params, true);
    declare(rec_.outputs, false);
  }

  struct Symbol {
    NameRef::Kind kind;
    int index;
    SourceRange decl;
  };

  void declarePorts() {
    auto declare = [&](std::vector<Port> &ports, NameRef::Kind kind) {
      for (size_t i = 0; i < ports.size(); ++i) {
        auto [it, fresh] = ports_.emplace(ports[i].name.name, Symbol{kind, static_cast<int>(i), ports[i].name.range});
        if (!fresh)
          realDiags_.error(ports[i].name.range, "redefinition of '" + ports[i].name.name + "'")
              .note(it->second.decl, "'" + ports[i].name.name + "' is first declared here");
      }
    };
    declare(rec_.inputs, NameRef::Input);
    declare(rec_.params, NameRef::Param);
    for (size_t i = 0; i < rec_.outputs.size(); ++i) {
      const Port &out = rec_.outputs[i];
      auto it = ports_.find(out.name.name);
      if (it != ports_.end()) {
        realDiags_.error(out.name.range, "redefinition of '" + out.name.name + "'")
            .note(it->second.decl, "'" + out.name.name + "' is first declared here");
        continue;
      }
      if (!outputIndex_.emplace(out.name.name, static_cast<int>(i)).second)
        realDiags_.error(out.name.range, "redefinition of '" + out.name.name + "'")
            .note(rec_.outputs[outputIndex_[out.name.name]].name.range, "'" + out.name.name + "' is first declared here");
    }
    rec_.checked.outputStmt.assign(rec_.outputs.size(), -1);
  }

  void collectAssignments() {
    for (size_t i = 0; i < rec_.body.size(); ++i) {
      Stmt &stmt = rec_.body[i];
      const std::string &name = stmt.target.name;
      auto port = ports_.find(name);
      if (port != ports_.end()) {
        const char *role = port->second.kind == NameRef::Input ? "input" : "parameter";
        realDiags_.error(stmt.target.range, std::string("cannot assign to ") + role + " '" + name + "'")
            .note(port->second.decl, "'" + name + "' is declared here")
            .hint(std::string(role) + "s are given from outside; assign a new name instead");
        invalidStmts_.insert(i);
        continue;
      }
      auto [it, fresh] = assigned_.emplace(name, static_cast<int>(i));
      if (!fresh) {
        realDiags_.error(stmt.target.range, "'" + name + "' is assigned twice")
            .note(rec_.body[it->second].target.range, "first assigned here")
            .hint("each name is assigned once per step; use a new name for the second value");
        invalidStmts_.insert(i);
        continue;
      }
      auto out = outputIndex_.find(name);
      if (out != outputIndex_.end()) {
        stmt.output = out->second;
        rec_.checked.outputStmt[out->second] = static_cast<int>(i);
      }
    }
  }

  // A name read in or before the statement that assigns it is a state: the read sees its previous value.
  void discoverStates() {
    std::set<int> stateStmts;
    for (size_t i = 0; i < rec_.body.size(); ++i) {
      if (!rec_.body[i].value) continue;
      forEachName(*rec_.body[i].value, [&](const Expr &e) {
        auto it = assigned_.find(e.text);
        if (it != assigned_.end() && it->second >= static_cast<int>(i)) stateStmts.insert(it->second);
      });
    }
    for (int s : stateStmts) {
      if (invalidStmts_.count(s)) continue;
      Stmt &stmt = rec_.body[s];
      stmt.kind = Stmt::Kind::State;
      stmt.state = static_cast<int>(rec_.checked.states.size());
      rec_.checked.states.push_back({stmt.target.name, {}, s, stmt.output});
    }
    for (size_t i = 0; i < rec_.body.size(); ++i)
      if (rec_.body[i].kind != Stmt::Kind::State && rec_.body[i].output >= 0) rec_.body[i].kind = Stmt::Kind::Output;
  }

  template <typename F>
  static void forEachName(const Expr &e, F &&f) {
    if (e.kind == Expr::Kind::Name) f(e);
    for (const ExprPtr &a : e.args) forEachName(*a, f);
  }

  // Declared dimensions on a statement (`s[d, n] = ...`), checked against the table.
  std::optional<DimSet> declaredDims(const Stmt &stmt, bool report) {
    if (!stmt.hasDims) return std::nullopt;
    DimSet dims;
    bool ok = true;
    for (const Ident &dim : stmt.dims) {
      int id = dimIndex(dim.name);
      if (id < 0) {
        if (report) unknownDimension(dim);
        ok = false;
        continue;
      }
      if (std::find(dims.begin(), dims.end(), id) != dims.end()) {
        if (report) realDiags_.error(dim.range, "dimension '" + dim.name + "' appears twice in '" + stmt.target.name + "'");
        ok = false;
        continue;
      }
      dims.push_back(id);
    }
    if (!ok) return std::nullopt;
    return dims;
  }

  void unknownDimension(const Ident &dim) {
    auto d = realDiags_.error(dim.range, "unknown dimension '" + dim.name + "'");
    std::string guess = closestMatch(dim.name, rec_.checked.dims);
    if (!guess.empty()) d.hint("did you mean '" + guess + "'?");
    else d.hint("dimensions are introduced by the inputs and parameters, as in x[d]");
  }

  // A state's dimensions: declared, else its output's, else inferred from its update with the state
  // itself taken as dimensionless (iterated, silently, until nothing changes).
  void inferStateDims() {
    std::vector<bool> fixed(rec_.checked.states.size(), false);
    for (StateInfo &state : rec_.checked.states) {
      const Stmt &stmt = rec_.body[state.stmt];
      size_t idx = &state - rec_.checked.states.data();
      if (auto dims = declaredDims(stmt, false)) {
        state.dims = *dims;
        fixed[idx] = true;
      } else if (state.output >= 0) {
        state.dims = rec_.outputs[state.output].dimIds;
        fixed[idx] = true;
      }
    }
    DiagnosticEngine silent(realDiags_.file());
    diags_ = &silent;
    for (int round = 0; round < 4; ++round) {
      analyzeBody();
      bool changed = false;
      for (size_t s = 0; s < rec_.checked.states.size(); ++s) {
        if (fixed[s]) continue;
        const Stmt &stmt = rec_.body[rec_.checked.states[s].stmt];
        if (!stmt.value) continue;
        DimSet dims = unite(sorted(rec_.checked.states[s].dims), stmt.value->dims);
        if (dims != rec_.checked.states[s].dims) {
          rec_.checked.states[s].dims = dims;
          changed = true;
        }
      }
      if (!changed) break;
    }
  }

  // ---- expressions ----
  void analyzeBody() {
    stmtDeps_.assign(rec_.body.size(), Dep{});
    usedPorts_.clear();
    usedLocals_.clear();
    for (size_t i = 0; i < rec_.body.size(); ++i) {
      Stmt &stmt = rec_.body[i];
      if (!stmt.value) continue;
      stmtDeps_[i] = analyze(*stmt.value, static_cast<int>(i));
      if (diags_ == &realDiags_ && !invalidStmts_.count(i)) checkStatement(stmt, static_cast<int>(i));
    }
  }

  Dep analyze(Expr &e, int stmt) {
    switch (e.kind) {
      case Expr::Kind::Number:
        e.type = ValueType::Real;
        e.dims.clear();
        return {};
      case Expr::Kind::Name: return analyzeName(e, stmt);
      case Expr::Kind::Unary: return analyzeUnary(e, stmt);
      case Expr::Kind::Binary: return analyzeBinary(e, stmt);
      case Expr::Kind::Call: return analyzeCall(e, stmt);
      case Expr::Kind::Sum: return analyzeSum(e, stmt);
    }
    return {};
  }

  Dep analyzeName(Expr &e, int stmt) {
    e.type = ValueType::Error;
    e.dims.clear();
    auto port = ports_.find(e.text);
    if (port != ports_.end()) {
      const Port &decl = port->second.kind == NameRef::Input ? rec_.inputs[port->second.index]
                                                            : rec_.params[port->second.index];
      e.ref = {port->second.kind, port->second.index};
      e.type = ValueType::Real;
      e.dims = sorted(decl.dimIds);
      usedPorts_.insert(e.text);
      return {};
    }
    auto it = assigned_.find(e.text);
    if (it == assigned_.end() || invalidStmts_.count(it->second)) {
      if (it == assigned_.end()) reportUnknownName(e);
      return {};
    }
    const Stmt &def = rec_.body[it->second];
    if (def.kind == Stmt::Kind::State) {
      const StateInfo &state = rec_.checked.states[def.state];
      bool prev = it->second >= stmt;
      e.ref = {prev ? NameRef::StatePrev : NameRef::StateCur, def.state};
      e.type = ValueType::Real;
      e.dims = sorted(state.dims);
      Dep dep;
      dep.reads.push_back({def.state, e.range, {}, {}});
      if (prev) {
        dep.kind = Dep::Affine;
        dep.state = def.state;
      } else {
        dep.kind = Dep::Other;
        dep.culprit = e.range;
        dep.reason = "it reads the updated value of state '" + state.name + "'";
      }
      return dep;
    }
    usedLocals_.insert(it->second);
    e.ref = {NameRef::Local, it->second};
    e.type = def.value ? def.value->type : ValueType::Error;
    e.dims = localDims(def);
    Dep dep = stmtDeps_[it->second];
    for (Dep::Read &read : dep.reads)
      if (read.via.empty()) read = {read.state, read.at, e.text, e.range};
    // A local that is merely affine in a state carries it; only one that lost linearity is a gate.
    if (dep.kind == Dep::Other && !dep.viaGate) {
      dep.viaGate = true;
      dep.gate = e.text;
      dep.gateUse = e.range;
    }
    return dep;
  }

  DimSet localDims(const Stmt &def) {
    if (auto declared = declaredDims(def, false)) return sorted(*declared);
    if (def.output >= 0) return sorted(rec_.outputs[def.output].dimIds);
    return def.value ? def.value->dims : DimSet{};
  }

  void reportUnknownName(const Expr &e) {
    if (outputIndex_.count(e.text)) {
      diag().error(e.range, "output '" + e.text + "' is read but never assigned")
          .hint("assign it in the body, as in " + e.text + " = ...");
      return;
    }
    std::vector<std::string> known;
    for (auto &[name, sym] : ports_) known.push_back(name);
    for (auto &[name, idx] : assigned_) known.push_back(name);
    auto d = diag().error(e.range, "unknown name '" + e.text + "'");
    std::string guess = closestMatch(e.text, known);
    if (!guess.empty()) d.hint("did you mean '" + guess + "'?");
    else if (findBuiltin(e.text)) d.hint("'" + e.text + "' is a function; call it as " + e.text + "(x)");
    else if (dimIndex(e.text) >= 0) d.hint("'" + e.text + "' is a dimension, not a value");
    else d.hint("names are inputs, parameters, or values assigned in the body");
  }

  bool requireType(const Expr &operand, ValueType want, const std::string &context) {
    if (operand.type == ValueType::Error || operand.type == want) return operand.type == want;
    if (want == ValueType::Real)
      diag().error(operand.range, context + " needs a number, but this is a boolean (a comparison)")
          .hint("turn a condition into a number with where(cond, 1, 0)");
    else
      diag().error(operand.range, context + " needs a boolean (a comparison), but this is a number")
          .hint("compare it, as in x > 0");
    return false;
  }

  static Dep otherAt(const Expr &e, std::string reason, const std::vector<const Dep *> &parts) {
    Dep dep;
    dep.kind = Dep::Other;
    dep.culprit = e.range;
    dep.reason = std::move(reason);
    for (const Dep *p : parts) {
      mergeReads(dep, *p);
      if (p->viaGate && !dep.viaGate) {
        dep.viaGate = true;
        dep.gate = p->gate;
        dep.gateUse = p->gateUse;
      }
    }
    return dep;
  }

  static void mergeReads(Dep &into, const Dep &from) {
    for (auto &read : from.reads) {
      bool seen = false;
      for (auto &r : into.reads) seen |= r.state == read.state;
      if (!seen) into.reads.push_back(read);
    }
  }

  std::string stateName(int s) const { return rec_.checked.states[s].name; }
  std::string firstStateName(const std::vector<const Dep *> &parts) const {
    for (const Dep *p : parts)
      if (!p->reads.empty()) return stateName(p->reads.front().state);
    return "?";
  }

  // Sum-like combination (+, -, where branches): affine parts of one state stay affine.
  Dep combineAdditive(const Expr &e, const std::vector<const Dep *> &parts) {
    for (const Dep *p : parts)
      if (p->kind == Dep::Other) {
        Dep dep = *p;
        for (const Dep *q : parts) mergeReads(dep, *q);
        return dep;
      }
    Dep dep;
    for (const Dep *p : parts) {
      if (p->kind != Dep::Affine) continue;
      if (dep.kind == Dep::Affine && dep.state != p->state)
        return otherAt(e, "it combines states '" + stateName(dep.state) + "' and '" + stateName(p->state) + "'", parts);
      if (dep.kind == Dep::None) dep = *p;
      else mergeReads(dep, *p);
    }
    return dep;
  }

  // Anything that is not affine (functions, comparisons): a state-dependent operand breaks linearity.
  Dep combineNonlinear(const Expr &e, const std::string &what, const std::vector<const Dep *> &parts) {
    for (const Dep *p : parts)
      if (p->kind == Dep::Other) return combineAdditive(e, parts);
    for (const Dep *p : parts)
      if (p->kind != Dep::None)
        return otherAt(e, what + " is applied to a value that depends on state '" + firstStateName(parts) + "'", parts);
    return {};
  }

  Dep analyzeUnary(Expr &e, int stmt) {
    Dep d = analyze(*e.args[0], stmt);
    e.dims = e.args[0]->dims;
    if (e.unary == UnaryOp::Neg) {
      e.type = requireType(*e.args[0], ValueType::Real, "'-'") ? ValueType::Real : ValueType::Error;
      return d;
    }
    e.type = requireType(*e.args[0], ValueType::Bool, "'!'") ? ValueType::Bool : ValueType::Error;
    return combineNonlinear(e, "'!'", {&d});
  }

  Dep analyzeBinary(Expr &e, int stmt) {
    Dep l = analyze(*e.args[0], stmt);
    Dep r = analyze(*e.args[1], stmt);
    e.dims = unite(e.args[0]->dims, e.args[1]->dims);
    std::string op = std::string("'") + binaryOpSpelling(e.binary) + "'";
    switch (e.binary) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
      case BinaryOp::Mul:
      case BinaryOp::Div: {
        bool ok = requireType(*e.args[0], ValueType::Real, op);
        ok = requireType(*e.args[1], ValueType::Real, op) && ok;
        e.type = ok ? ValueType::Real : ValueType::Error;
        break;
      }
      case BinaryOp::And:
      case BinaryOp::Or: {
        bool ok = requireType(*e.args[0], ValueType::Bool, op);
        ok = requireType(*e.args[1], ValueType::Bool, op) && ok;
        e.type = ok ? ValueType::Bool : ValueType::Error;
        return combineNonlinear(e, op, {&l, &r});
      }
      default: {
        bool ok = requireType(*e.args[0], ValueType::Real, op);
        ok = requireType(*e.args[1], ValueType::Real, op) && ok;
        e.type = ok ? ValueType::Bool : ValueType::Error;
        return combineNonlinear(e, "the comparison " + op, {&l, &r});
      }
    }
    if (e.binary == BinaryOp::Add || e.binary == BinaryOp::Sub) return combineAdditive(e, {&l, &r});
    if (l.kind == Dep::Other || r.kind == Dep::Other) return combineAdditive(e, {&l, &r});
    if (e.binary == BinaryOp::Mul) {
      if (l.kind == Dep::Affine && r.kind == Dep::Affine)
        return otherAt(e, "it multiplies two values that depend on state '" + stateName(l.state) + "'", {&l, &r});
      return combineAdditive(e, {&l, &r});
    }
    if (r.kind != Dep::None)
      return otherAt(e, "it divides by a value that depends on state '" + stateName(r.reads.front().state) + "'",
                     {&l, &r});
    return l;
  }

  Dep analyzeCall(Expr &e, int stmt) {
    std::vector<Dep> deps;
    for (ExprPtr &a : e.args) deps.push_back(analyze(*a, stmt));
    e.type = ValueType::Error;
    e.dims.clear();
    for (ExprPtr &a : e.args) e.dims = unite(e.dims, a->dims);
    const BuiltinInfo *info = findBuiltin(e.text);
    if (!info) {
      auto d = diag().error(e.nameRange, "unknown function '" + e.text + "'");
      std::vector<std::string> names;
      for (const BuiltinInfo &b : builtins()) names.push_back(b.name);
      std::string guess = closestMatch(e.text, names);
      if (ports_.count(e.text) || assigned_.count(e.text)) d.hint("'" + e.text + "' is a value, not a function");
      else if (!guess.empty()) d.hint("did you mean '" + guess + "'?");
      else d.hint("functions: sigmoid softplus exp log tanh relu silu g abs sqrt min max where");
      return {};
    }
    e.builtin = info->fn;
    if (static_cast<int>(e.args.size()) != info->arity) {
      diag().error(e.range, "'" + e.text + "' takes " + std::to_string(info->arity) + " argument" +
                                (info->arity == 1 ? "" : "s") + ", but " + std::to_string(e.args.size()) +
                                (e.args.size() == 1 ? " was" : " were") + " given");
      return {};
    }
    std::vector<const Dep *> parts;
    for (const Dep &d : deps) parts.push_back(&d);
    std::string what = "'" + e.text + "'";
    if (info->fn == Builtin::Where) {
      bool ok = requireType(*e.args[0], ValueType::Bool, "the condition of 'where'");
      ok = requireType(*e.args[1], ValueType::Real, "'where'") && ok;
      ok = requireType(*e.args[2], ValueType::Real, "'where'") && ok;
      e.type = ok ? ValueType::Real : ValueType::Error;
      if (!deps[0].reads.empty())
        return otherAt(e, "the condition of 'where' depends on state '" + stateName(deps[0].reads.front().state) + "'",
                       parts);
      return combineAdditive(e, parts);
    }
    bool ok = true;
    for (ExprPtr &a : e.args) ok = requireType(*a, ValueType::Real, what) && ok;
    e.type = ok ? ValueType::Real : ValueType::Error;
    return combineNonlinear(e, what, parts);
  }

  Dep analyzeSum(Expr &e, int stmt) {
    Dep d = analyze(*e.args[0], stmt);
    e.type = requireType(*e.args[0], ValueType::Real, "'sum'") ? ValueType::Real : ValueType::Error;
    e.dims = e.args[0]->dims;
    e.sumDim = dimIndex(e.text);
    if (e.sumDim < 0) {
      if (diags_ == &realDiags_) unknownDimension({e.text, e.nameRange});
      e.type = ValueType::Error;
      return d;
    }
    auto it = std::find(e.dims.begin(), e.dims.end(), e.sumDim);
    if (it == e.dims.end()) {
      if (e.args[0]->type != ValueType::Error)
        diag().error(e.nameRange, "cannot sum over '" + e.text + "': the operand has dimensions " +
                                      formatDims(rec_, e.args[0]->dims))
            .hint("sum(n: x) contracts a dimension that x has; broadcasting never adds one implicitly");
      e.type = ValueType::Error;
      return d;
    }
    e.dims.erase(it);
    if (d.kind == Dep::Affine) {
      const DimSet &stateDims = rec_.checked.states[d.state].dims;
      if (std::find(stateDims.begin(), stateDims.end(), e.sumDim) != stateDims.end())
        return otherAt(e, "summing over '" + e.text + "' mixes the elements of state '" + stateName(d.state) + "'",
                       {&d});
    }
    return d;
  }

  DiagnosticEngine &diag() { return *diags_; }

  // ---- statements ----
  void checkStatement(Stmt &stmt, int index) {
    const Expr &value = *stmt.value;
    if (value.type == ValueType::Bool) {
      diag().error(value.range, "'" + stmt.target.name + "' is assigned a boolean (a comparison)")
          .hint("values must be numbers; pick between two with where(cond, a, b)");
      return;
    }
    if (value.type == ValueType::Error) return;
    std::optional<DimSet> declared = declaredDims(stmt, true);
    if (stmt.hasDims && !declared) return;
    std::string name = stmt.target.name;
    if (badOutputs_.count(name)) return;  // its declaration is already reported
    if (stmt.output >= 0) {
      const Port &out = rec_.outputs[stmt.output];
      if (declared && sorted(*declared) != sorted(out.dimIds)) {
        diag().error(SourceRange::span(stmt.dims.empty() ? stmt.target.range : stmt.dims.front().range,
                                       stmt.dims.empty() ? stmt.target.range : stmt.dims.back().range),
                     "dimension mismatch: '" + name + "' is declared " + formatDims(rec_, sorted(*declared)) +
                         " here but " + formatDims(rec_, sorted(out.dimIds)) + " in the outputs")
            .note(out.range, "output declared here");
        return;
      }
    }
    DimSet target = stmt.kind == Stmt::Kind::State ? sorted(rec_.checked.states[stmt.state].dims)
                    : declared                      ? sorted(*declared)
                    : stmt.output >= 0              ? sorted(rec_.outputs[stmt.output].dimIds)
                                                    : value.dims;
    if (!isSubset(value.dims, target)) {
      DimSet extra;
      std::set_difference(value.dims.begin(), value.dims.end(), target.begin(), target.end(), std::back_inserter(extra));
      auto d = diag().error(value.range, "dimension mismatch: the value has dimensions " + formatDims(rec_, value.dims) +
                                             " but '" + name + "' has " + formatDims(rec_, target));
      if (stmt.output >= 0) d.note(rec_.outputs[stmt.output].range, "'" + name + "' is declared here");
      d.hint("contract the extra dimension with sum(" + rec_.checked.dims[extra.front()] + ": ...), or declare '" +
             name + "' with it");
      return;
    }
    if (stmt.kind == Stmt::Kind::State) checkLinearity(stmt, stmtDeps_[index]);
  }

  void checkLinearity(const Stmt &stmt, const Dep &dep) {
    const std::string &self = stmt.target.name;
    for (const Dep::Read &read : dep.reads) {
      if (stateName(read.state) == self) continue;
      auto d = diag().error(read.at, "the update of state '" + self + "' reads state '" + stateName(read.state) + "'");
      if (!read.via.empty()) d.note(read.viaUse, "through '" + read.via + "'");
      d.hint("each update may read only its own previous value; its coefficients may depend on inputs and "
             "parameters only");
      return;
    }
    if (dep.kind != Dep::Other) return;
    if (dep.viaGate) {
      SourceRange read = dep.reads.empty() ? dep.culprit : dep.reads.front().at;
      diag().error(dep.gateUse, "the gate '" + dep.gate + "' reads state '" + self + "'")
          .note(read, "'" + dep.gate + "' depends on '" + self + "' here")
          .hint("gates may depend on inputs and parameters only, so that the update keeps the form " + self +
                " = a * " + self + " + b");
      return;
    }
    diag().error(dep.culprit, "the update of state '" + self + "' is not linear in '" + self + "': " + dep.reason)
        .hint(linearHint(self));
  }

  void checkOutputs() {
    if (rec_.outputs.empty())
      realDiags_.error(rec_.name.range, "recurrence '" + rec_.name.name + "' has no outputs")
          .hint("declare them after '->', as in -> h[d]");
    for (size_t i = 0; i < rec_.outputs.size(); ++i)
      if (rec_.checked.outputStmt[i] < 0 && outputIndex_.count(rec_.outputs[i].name.name) &&
          outputIndex_[rec_.outputs[i].name.name] == static_cast<int>(i))
        realDiags_.error(rec_.outputs[i].name.range, "output '" + rec_.outputs[i].name.name + "' is never assigned")
            .hint("assign it in the body, as in " + rec_.outputs[i].name.name + " = ...");
    if (rec_.checked.states.empty() && !rec_.body.empty())
      realDiags_.error(rec_.name.range, "recurrence '" + rec_.name.name + "' has no state")
          .hint("a state is a name read before or in its own assignment, as in h = a * h + b");
  }

  void checkUnused() {
    auto warnUnused = [&](const std::vector<Port> &ports, const char *role) {
      for (const Port &p : ports)
        if (!usedPorts_.count(p.name.name))
          realDiags_.warning(p.name.range, std::string(role) + " '" + p.name.name + "' is never used");
    };
    warnUnused(rec_.inputs, "input");
    warnUnused(rec_.params, "parameter");
    for (size_t i = 0; i < rec_.body.size(); ++i) {
      const Stmt &s = rec_.body[i];
      if (s.kind == Stmt::Kind::Local && !invalidStmts_.count(i) && !usedLocals_.count(static_cast<int>(i)))
        realDiags_.warning(s.target.range, "'" + s.target.name + "' is computed but never used");
    }
  }

  Recurrence &rec_;
  DiagnosticEngine &realDiags_;
  DiagnosticEngine *diags_ = nullptr;  // real, or a silent one while inferring state dimensions
  std::map<std::string, Symbol> ports_;
  std::map<std::string, int> outputIndex_;
  std::map<std::string, int> assigned_;
  std::set<size_t> invalidStmts_;
  std::set<std::string> badOutputs_;
  std::vector<Dep> stmtDeps_;
  std::set<std::string> usedPorts_;
  std::set<int> usedLocals_;
};

}  // namespace

bool analyze(Module &module, DiagnosticEngine &diags) {
  size_t before = diags.errorCount();
  std::map<std::string, SourceRange> names;
  for (Recurrence &rec : module.recurrences) {
    auto [it, fresh] = names.emplace(rec.name.name, rec.name.range);
    if (!fresh)
      diags.error(rec.name.range, "redefinition of recurrence '" + rec.name.name + "'")
          .note(it->second, "first defined here");
    if (!rec.hasSyntaxErrors) RecurrenceChecker(rec, diags).run();
  }
  return diags.errorCount() == before;
}

bool parseAndCheck(const SourceFile &file, DiagnosticEngine &diags, Module &out) {
  out = parse(file, diags);
  bool syntaxOk = !diags.hasErrors();
  return analyze(out, diags) && syntaxOk;
}

}  // namespace scanforge::dsl
