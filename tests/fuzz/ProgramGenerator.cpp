// The generator: ports over up to three named dimensions, state-free gate locals, linear state
// updates in several affine shapes, then locals and outputs that may be any function of states.
// Values stay sane by construction: decays are sigmoids (|a| < 1), exp only of tanh, log of
// 2 + |x|, sqrt of 1 + |x|, divisors 1 + x*x or 2 + |x|.
#include "tests/fuzz/ProgramGenerator.h"

#include <algorithm>
#include <random>
#include <set>

namespace scanforge::fuzz {
namespace {

using Dims = std::vector<std::string>;  // kept in kAllDims order
const Dims kAllDims = {"d", "n", "e"};

Dims canonical(const std::set<std::string> &s) {
  Dims out;
  for (const std::string &d : kAllDims)
    if (s.count(d)) out.push_back(d);
  return out;
}
Dims unite(const Dims &a, const Dims &b) {
  std::set<std::string> s(a.begin(), a.end());
  s.insert(b.begin(), b.end());
  return canonical(s);
}
bool subset(const Dims &a, const Dims &b) {
  return std::all_of(a.begin(), a.end(), [&](const std::string &d) { return std::find(b.begin(), b.end(), d) != b.end(); });
}
std::string dimList(const Dims &d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + d[i];
  return s;
}

struct Expr {
  std::string text;
  Dims dims;
};

struct Var {
  std::string name;
  Dims dims;
};

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool coin(double p = 0.5) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  // A random subset of `from`, in canonical order.
  Dims subsetOf(const Dims &from, double p = 0.5) {
    Dims out;
    for (const std::string &d : from)
      if (coin(p)) out.push_back(d);
    return out;
  }

  std::string constant() {
    static const char *c[] = {"0.5", "2", "1.5", "0.25", "3", "1e-1", "0.75"};
    return c[pick(7)];
  }

  // A leaf whose dimensions lie within `allowed`.
  Expr leaf(const Dims &allowed) {
    std::vector<const Var *> ok;
    for (const Var &v : vars)
      if (subset(v.dims, allowed)) ok.push_back(&v);
    if (ok.empty() || coin(0.15)) return {constant(), {}};
    const Var *v = ok[pick(static_cast<int>(ok.size()))];
    return {v->name, v->dims};
  }

  std::string condition(int depth, const Dims &allowed, Dims &dims) {
    if (depth > 0 && coin(0.25)) {
      Dims a, b;
      std::string l = condition(depth - 1, allowed, a), r = condition(depth - 1, allowed, b);
      dims = unite(a, b);
      return "(" + l + (coin() ? " && " : " || ") + r + ")";
    }
    if (depth > 0 && coin(0.15)) return "!(" + condition(depth - 1, allowed, dims) + ")";
    static const char *ops[] = {" < ", " <= ", " > ", " >= ", " == ", " != "};
    Expr l = expr(depth - 1, allowed), r = coin() ? Expr{constant(), {}} : expr(depth - 1, allowed);
    dims = unite(l.dims, r.dims);
    return l.text + ops[pick(6)] + r.text;
  }

  // A state-free (unless states are among `vars`) numeric expression with dims within `allowed`.
  Expr expr(int depth, const Dims &allowed) {
    if (depth <= 0 || coin(0.2)) return leaf(allowed);
    switch (pick(22)) {
      case 0: case 1: case 2: {  // + - * with operands of any (mismatched) ranks
        Expr a = expr(depth - 1, allowed), b = expr(depth - 1, allowed);
        static const char *ops[] = {" + ", " - ", " * "};
        return {"(" + a.text + ops[pick(3)] + b.text + ")", unite(a.dims, b.dims)};
      }
      case 3: {  // division by a value bounded away from zero
        Expr den = expr(depth - 1, allowed);
        std::string divisor = coin() ? "(1 + " + den.text + " * " + den.text + ")" : "(2 + abs(" + den.text + "))";
        Expr num = expr(depth - 1, allowed);
        return {"(" + num.text + " / " + divisor + ")", unite(num.dims, den.dims)};
      }
      case 4: { Expr a = expr(depth - 1, allowed); return {"(-" + a.text + ")", a.dims}; }
      case 5: case 6: case 7: case 8: case 9: case 10: case 11: {
        static const char *fn[] = {"sigmoid", "softplus", "tanh", "abs", "relu", "silu", "g"};
        Expr a = expr(depth - 1, allowed);
        return {std::string(fn[pick(7)]) + "(" + a.text + ")", a.dims};
      }
      case 12: { Expr a = expr(depth - 1, allowed); return {"exp(tanh(" + a.text + "))", a.dims}; }
      case 13: { Expr a = expr(depth - 1, allowed); return {"log(2 + abs(" + a.text + "))", a.dims}; }
      case 14: { Expr a = expr(depth - 1, allowed); return {"log(1 + sigmoid(" + a.text + "))", a.dims}; }
      case 15: { Expr a = expr(depth - 1, allowed); return {"sqrt(1 + abs(" + a.text + "))", a.dims}; }
      case 16: case 17: {
        Expr a = expr(depth - 1, allowed), b = expr(depth - 1, allowed);
        return {std::string(coin() ? "min" : "max") + "(" + a.text + ", " + b.text + ")", unite(a.dims, b.dims)};
      }
      case 18: case 19: {
        Dims cd;
        std::string c = condition(depth - 1, allowed, cd);
        Expr a = expr(depth - 1, allowed), b = expr(depth - 1, allowed);
        return {std::string(coin(0.8) ? "where" : "select") + "(" + c + ", " + a.text + ", " + b.text + ")",
                unite(cd, unite(a.dims, b.dims))};
      }
      default: {  // sum(n: e * leaf-with-n): a contraction over a dimension `allowed` lacks
        std::vector<std::string> extra;
        for (const std::string &d : dims)
          if (std::find(allowed.begin(), allowed.end(), d) == allowed.end()) extra.push_back(d);
        if (extra.empty()) return expr(depth - 1, allowed);
        std::string n = extra[pick(static_cast<int>(extra.size()))];
        Dims wider = unite(allowed, {n});
        std::vector<const Var *> carriers;
        for (const Var &v : vars)
          if (subset(v.dims, wider) && std::find(v.dims.begin(), v.dims.end(), n) != v.dims.end()) carriers.push_back(&v);
        if (carriers.empty()) return expr(depth - 1, allowed);
        const Var *c = carriers[pick(static_cast<int>(carriers.size()))];
        Expr a = expr(depth - 1, wider);
        Dims rd = unite(a.dims, c->dims);
        rd.erase(std::find(rd.begin(), rd.end(), n));
        return {"sum(" + n + ": " + a.text + " * " + c->name + ")", rd};
      }
    }
  }

  std::mt19937_64 rng_;
  Dims dims;              // the program's dimensions
  std::vector<Var> vars;  // names readable at this point
};

}  // namespace

std::string Program::text() const {
  auto ports = [](const std::vector<GenPort> &ps) {
    std::string s;
    for (size_t i = 0; i < ps.size(); ++i) {
      s += (i ? ", " : "") + ps[i].name;
      if (!ps[i].dims.empty() || i % 2) s += "[" + dimList(ps[i].dims) + "]";  // `x` and `x[]` both
      if (ps[i].bf16) s += ": bf16";
    }
    return s;
  };
  std::string s = std::string(reverse ? "reverse " : "") + "recurrence " + name + "(" + ports(inputs);
  if (!params.empty()) s += "; " + ports(params);
  s += ") -> " + ports(outputs) + " {\n";
  for (const GenStatement &st : body) s += "  " + st.lhs + " = " + st.rhs + "\n";
  return s + "}\n";
}

Program generate(uint64_t seed) {
  Gen g(seed);
  Program p;
  p.reverse = g.coin(0.3);
  g.dims = Dims(kAllDims.begin(), kAllDims.begin() + 1 + g.pick(3));
  int nInputs = 1 + g.pick(4), nParams = g.pick(3);
  std::set<std::string> covered;
  for (int i = 0; i < nInputs + nParams; ++i) {
    GenPort port{(i < nInputs ? "x" : "p") + std::to_string(i < nInputs ? i : i - nInputs), g.subsetOf(g.dims), false};
    if (i == 0 && port.dims.empty()) port.dims = {g.dims[0]};  // some port has a dimension (mutants need one)
    if (i < nInputs) port.bf16 = g.coin(0.2);
    covered.insert(port.dims.begin(), port.dims.end());
    (i < nInputs ? p.inputs : p.params).push_back(port);
    g.vars.push_back({port.name, port.dims});
  }
  // Every dimension must come from some port: the last input picks up the missing ones.
  for (const std::string &d : g.dims)
    if (!covered.count(d)) p.inputs.back().dims.push_back(d);
  p.inputs.back().dims = unite(p.inputs.back().dims, {});
  g.vars[nInputs - 1].dims = p.inputs.back().dims;

  int nLocals = g.pick(3);
  for (int i = 0; i < nLocals; ++i) {  // state-free locals (gates, candidates)
    Expr e = g.expr(3, g.dims);
    std::string name = "z" + std::to_string(i);
    p.body.push_back({name, e.text, "", false});
    g.vars.push_back({name, e.dims});
  }
  std::vector<Var> states;
  int nStates = 1 + g.pick(3);
  for (int i = 0; i < nStates; ++i) {
    std::string s = "s" + std::to_string(i);
    Dims sd = g.subsetOf(g.dims, 0.6);
    std::string a = "sigmoid(" + g.expr(2, sd).text + ")", b = g.expr(3, sd).text;
    std::string rhs;
    switch (g.pick(6)) {
      case 0: rhs = a + " * " + s + " + " + b; break;
      case 1: rhs = "(1 - " + a + ") * " + s + " + " + a + " * " + b; break;
      case 2: { Dims cd; rhs = "where(" + g.condition(1, sd, cd) + ", " + a + " * " + s + ", 0.5 * " + s + ") + " + b; break; }
      case 3: rhs = b + " - " + s + " * " + a; break;
      case 4: rhs = "(" + a + " * " + s + " + " + b + ") / (2 + abs(" + g.expr(1, sd).text + "))"; break;
      default: {  // a local carries the state affinely into its update
        std::string half = "c" + std::to_string(i);
        p.body.push_back({half, a + " * " + s, "", false});
        rhs = half + " + " + b;
      }
    }
    p.body.push_back({sd.empty() ? s : s + "[" + dimList(sd) + "]", rhs, "", true});
    states.push_back({s, sd});
  }
  for (const Var &s : states) g.vars.push_back(s);  // from here on, states read their new values
  if (g.coin(0.5)) {  // a local non-linear in the states
    Expr e = g.expr(3, g.dims);
    p.body.push_back({"q", "tanh(" + e.text + ") * " + e.text, "", false});
    g.vars.push_back({"q", e.dims});
  }
  int nOutputs = 1 + g.pick(3);
  for (int i = 0; i < nOutputs; ++i) {
    if (i == 0 && g.coin(0.3)) {  // a state that is also an output
      const Var &s = states[g.pick(static_cast<int>(states.size()))];
      p.outputs.push_back({s.name, s.dims, g.coin(0.2)});
      for (GenStatement &st : p.body)
        if (st.isState && (st.lhs == s.name || st.lhs.rfind(s.name + "[", 0) == 0)) st.output = s.name;
      continue;
    }
    std::string name = "y" + std::to_string(i);
    const Var &s = states[g.pick(static_cast<int>(states.size()))];
    Dims allowed = g.coin(0.4) ? g.subsetOf(g.dims, 0.6) : g.dims;  // narrower outputs contract
    Expr e = g.expr(3, allowed);
    std::string term = g.coin() ? "tanh(" + s.name + ")" : s.name;
    Dims termDims;
    for (const std::string &d : s.dims)  // contract the state's dimensions the output lacks
      if (std::find(allowed.begin(), allowed.end(), d) == allowed.end()) term = "sum(" + d + ": " + term + ")";
      else termDims.push_back(d);
    Expr out{"(" + e.text + (g.coin() ? " * " : " + ") + term + ")", unite(e.dims, termDims)};
    p.outputs.push_back({name, out.dims, g.coin(0.2)});
    p.body.push_back({name, out.text, name, false});
  }
  return p;
}

Mutant mutate(const Program &program, uint64_t seed) {
  Gen g(seed * 7919 + 13);
  Mutant m{"", program};
  Program &p = m.program;
  std::vector<size_t> stateLines, outputLines;
  for (size_t i = 0; i < p.body.size(); ++i) {
    if (p.body[i].isState) stateLines.push_back(i);
    else if (!p.body[i].output.empty()) outputLines.push_back(i);
  }
  GenStatement &st = p.body[stateLines[g.pick(static_cast<int>(stateLines.size()))]];
  std::string s = st.lhs.substr(0, st.lhs.find('['));
  int kind = g.pick(outputLines.empty() ? 7 : 11);
  switch (kind) {
    case 0: m.kind = "state-squared"; st.rhs = s + " * " + s + " + 0.5"; break;
    case 1: m.kind = "state-in-exp"; st.rhs = "exp(" + s + ") * 0.5"; break;
    case 2: m.kind = "divide-by-state"; st.rhs = "0.5 * " + s + " + 1 / (2 + " + s + ")"; break;
    case 3: m.kind = "condition-on-state"; st.rhs = "where(" + s + " > 0, " + s + ", 0.5 * " + s + ") + 1"; break;
    case 4: {  // a gate local reading the state
      m.kind = "gate-reads-state";
      st.rhs = "zbad * " + s + " + 1";
      size_t at = static_cast<size_t>(&st - p.body.data());
      p.body.insert(p.body.begin() + static_cast<long>(at), {"zbad", "sigmoid(" + s + " + 1)", "", false});
      break;
    }
    case 5: {
      m.kind = "update-reads-other-state";
      std::string other;
      for (size_t i : stateLines) {
        std::string o = p.body[i].lhs.substr(0, p.body[i].lhs.find('['));
        if (o != s) other = o;
      }
      if (other.empty()) { m.kind = "state-in-tanh"; st.rhs = "tanh(" + s + ") + 1"; }
      else st.rhs = "0.5 * " + s + " + " + other;
      break;
    }
    case 6: m.kind = "state-times-state-gate"; st.rhs = "sigmoid(" + s + ") * " + s + " + 1"; break;
    default: {
      GenStatement &out = p.body[outputLines[g.pick(static_cast<int>(outputLines.size()))]];
      const GenPort *port = nullptr;
      for (const GenPort &o : p.outputs)
        if (o.name == out.output) port = &o;
      if (kind == 7) { m.kind = "unknown-function"; out.rhs = "frobnicate(" + out.rhs + ")"; }
      else if (kind == 8) { m.kind = "unknown-name"; out.rhs = out.rhs + " + undefined_q"; }
      else if (kind == 9) { m.kind = "boolean-as-number"; out.rhs = out.rhs + " + (" + p.inputs[0].name + " > 0)"; }
      else {  // dimension mismatch: widen the value past the output's declared dimensions
        m.kind = "dimension-mismatch";
        std::string wider;
        for (const GenPort &in : p.inputs)
          if (!subset(in.dims, port->dims)) wider = in.name;
        if (!wider.empty()) out.rhs = out.rhs + " * " + wider;
        else {  // a narrower value broadcasts into the output, so no port widens it: sum over a non-dimension
          m.kind = "unknown-dimension";
          out.rhs = "sum(nodim: " + out.rhs + ")";
        }
      }
    }
  }
  return m;
}

}  // namespace scanforge::fuzz
