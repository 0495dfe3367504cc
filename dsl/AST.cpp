#include "dsl/AST.h"

namespace scanforge::dsl {

const char *elemTypeName(ElemType type) { return type == ElemType::BF16 ? "bf16" : "f32"; }

const std::vector<BuiltinInfo> &builtins() {
  static const std::vector<BuiltinInfo> table = {
      {Builtin::Sigmoid, "sigmoid", 1}, {Builtin::Softplus, "softplus", 1}, {Builtin::Exp, "exp", 1},
      {Builtin::Log, "log", 1},         {Builtin::Tanh, "tanh", 1},         {Builtin::Relu, "relu", 1},
      {Builtin::Silu, "silu", 1},       {Builtin::G, "g", 1},               {Builtin::Abs, "abs", 1},
      {Builtin::Sqrt, "sqrt", 1},       {Builtin::Min, "min", 2},           {Builtin::Max, "max", 2},
      {Builtin::Where, "where", 3},
  };
  return table;
}

const BuiltinInfo *findBuiltin(const std::string &name) {
  for (const BuiltinInfo &info : builtins())
    if (name == info.name) return &info;
  if (name == "select") return &builtinInfo(Builtin::Where);
  return nullptr;
}

const BuiltinInfo &builtinInfo(Builtin fn) {
  for (const BuiltinInfo &info : builtins())
    if (info.fn == fn) return info;
  return builtins().front();
}

const char *binaryOpSpelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
  }
  return "?";
}

}  // namespace scanforge::dsl
