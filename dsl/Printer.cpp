#include "dsl/Printer.h"

#include <sstream>

#include "dsl/Sema.h"

namespace scanforge::dsl {
namespace {

// Binding strength: higher binds tighter.
int precedence(const Expr &e) {
  switch (e.kind) {
    case Expr::Kind::Binary:
      switch (e.binary) {
        case BinaryOp::Or: return 1;
        case BinaryOp::And: return 2;
        case BinaryOp::Add:
        case BinaryOp::Sub: return 4;
        case BinaryOp::Mul:
        case BinaryOp::Div: return 5;
        default: return 3;  // comparisons
      }
    case Expr::Kind::Unary: return 6;
    default: return 7;
  }
}

void print(std::ostream &os, const Expr &e);

void printOperand(std::ostream &os, const Expr &e, int minPrec) {
  bool parens = precedence(e) < minPrec;
  if (parens) os << "(";
  print(os, e);
  if (parens) os << ")";
}

void print(std::ostream &os, const Expr &e) {
  switch (e.kind) {
    case Expr::Kind::Number:
    case Expr::Kind::Name: os << e.text; return;
    case Expr::Kind::Unary:
      os << (e.unary == UnaryOp::Neg ? "-" : "!");
      printOperand(os, *e.args[0], 6);
      return;
    case Expr::Kind::Binary: {
      int p = precedence(e);
      bool comparison = p == 3;
      printOperand(os, *e.args[0], comparison ? p + 1 : p);
      os << " " << binaryOpSpelling(e.binary) << " ";
      printOperand(os, *e.args[1], p + 1);  // left-associative: a - (b - c) keeps its parentheses
      return;
    }
    case Expr::Kind::Call:
      os << e.text << "(";
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i) os << ", ";
        print(os, *e.args[i]);
      }
      os << ")";
      return;
    case Expr::Kind::Sum:
      os << "sum(" << e.text << ": ";
      print(os, *e.args[0]);
      os << ")";
      return;
  }
}

std::string portText(const Port &p) {
  std::string out = p.name.name;
  if (!p.dims.empty()) {
    out += "[";
    for (size_t i = 0; i < p.dims.size(); ++i) out += (i ? ", " : "") + p.dims[i].name;
    out += "]";
  }
  if (p.type == ElemType::BF16) out += ": bf16";
  return out;
}

std::string portList(const std::vector<Port> &ports) {
  std::string out;
  for (size_t i = 0; i < ports.size(); ++i) out += (i ? ", " : "") + portText(ports[i]);
  return out;
}

std::string annotation(const Recurrence &rec, const Stmt &s) {
  switch (s.kind) {
    case Stmt::Kind::State: {
      const StateInfo &st = rec.checked.states[s.state];
      return "state " + formatDims(rec, st.dims) + (s.output >= 0 ? ", output" : "");
    }
    case Stmt::Kind::Output: return "output " + formatDims(rec, rec.outputs[s.output].dimIds);
    case Stmt::Kind::Local: return "local " + formatDims(rec, s.value ? s.value->dims : DimSet{});
  }
  return "";
}

}  // namespace

std::string printExpr(const Expr &e) {
  std::ostringstream os;
  print(os, e);
  return os.str();
}

void printModule(std::ostream &os, const Module &module, bool annotate) {
  for (size_t r = 0; r < module.recurrences.size(); ++r) {
    const Recurrence &rec = module.recurrences[r];
    if (r) os << "\n";
    if (annotate) {
      os << "# dimensions: b t";
      for (const std::string &d : rec.checked.dims) os << " " << d;
      os << "\n";
    }
    os << (rec.reverse ? "reverse " : "") << "recurrence " << rec.name.name << "(" << portList(rec.inputs);
    if (!rec.params.empty()) os << "; " << portList(rec.params);
    os << ") -> " << portList(rec.outputs) << " {\n";
    std::vector<std::string> lines;
    size_t width = 0;
    for (const Stmt &s : rec.body) {
      std::string line = "  " + s.target.name;
      if (s.hasDims) {
        line += "[";
        for (size_t i = 0; i < s.dims.size(); ++i) line += (i ? ", " : "") + s.dims[i].name;
        line += "]";
      }
      line += " = " + (s.value ? printExpr(*s.value) : std::string("?"));
      width = std::max(width, line.size());
      lines.push_back(line);
    }
    for (size_t i = 0; i < lines.size(); ++i) {
      os << lines[i];
      if (annotate) os << std::string(width - lines[i].size() + 2, ' ') << "# " << annotation(rec, rec.body[i]);
      os << "\n";
    }
    os << "}\n";
  }
}

}  // namespace scanforge::dsl
