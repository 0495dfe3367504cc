// The syntax tree of a .scan file. The parser fills the syntax; semantic analysis (Sema.h)
// fills the `checked` parts: what each name refers to, each expression's type and dimensions,
// which assignments are states, and the dimension table of the recurrence.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dsl/Source.h"

namespace scanforge::dsl {

struct Ident {
  std::string name;
  SourceRange range;
};

enum class ElemType { F32, BF16 };
const char *elemTypeName(ElemType type);

// Element-wise functions the language knows (see docs/dsl.md for their definitions).
enum class Builtin {
  Sigmoid, Softplus, Exp, Log, Tanh, Relu, Silu, G, Abs, Sqrt, Min, Max, Where,
};
struct BuiltinInfo {
  Builtin fn;
  const char *name;
  int arity;
};
const std::vector<BuiltinInfo> &builtins();
const BuiltinInfo *findBuiltin(const std::string &name);
const BuiltinInfo &builtinInfo(Builtin fn);

enum class UnaryOp { Neg, Not };
enum class BinaryOp { Add, Sub, Mul, Div, Lt, Le, Gt, Ge, Eq, Ne, And, Or };
const char *binaryOpSpelling(BinaryOp op);

// Value types of expressions: numbers, or booleans from comparisons (only `where` consumes them).
enum class ValueType { Real, Bool, Error };

// A dimension set: indices into Recurrence::Checked::dims, kept sorted.
using DimSet = std::vector<int>;

// What a name in an expression refers to.
struct NameRef {
  enum Kind { Unresolved, Input, Param, Local, StatePrev, StateCur } kind = Unresolved;
  int index = -1;  // input/param index, statement index (Local) or state index
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind { Number, Name, Unary, Binary, Call, Sum };
  Kind kind;
  SourceRange range;
  std::string text;  // Number: spelling; Name: the name; Call: callee; Sum: contracted dimension
  SourceRange nameRange;  // Call: callee; Sum: the dimension name
  double number = 0;
  UnaryOp unary = UnaryOp::Neg;
  BinaryOp binary = BinaryOp::Add;
  std::vector<ExprPtr> args;

  // Filled by sema.
  ValueType type = ValueType::Error;
  DimSet dims;
  NameRef ref;
  Builtin builtin = Builtin::Sigmoid;
  int sumDim = -1;
};

// An input, parameter or output in the signature: `name[d, n]: bf16`.
struct Port {
  Ident name;
  std::vector<Ident> dims;
  ElemType type = ElemType::F32;
  SourceRange typeRange;
  SourceRange range;
  DimSet dimIds;              // sema: dimension indices in declared order (the memory layout order)
};

// `target = value` or `target[d, n] = value` (dimensions declared for a state).
struct Stmt {
  Ident target;
  bool hasDims = false;
  std::vector<Ident> dims;
  ExprPtr value;
  SourceRange range;

  // Filled by sema.
  enum class Kind { Local, State, Output } kind = Kind::Local;
  int state = -1;   // index into Checked::states when kind == State
  int output = -1;  // index of the output this statement defines, or -1
};

struct StateInfo {
  std::string name;
  DimSet dims;        // layout order: declared, or the output's, or canonical
  int stmt = -1;      // the statement that updates it
  int output = -1;    // output index when the state is also an output
};

struct Recurrence {
  Ident name;
  bool reverse = false;
  std::vector<Port> inputs, params, outputs;
  std::vector<Stmt> body;
  SourceRange range;
  bool hasSyntaxErrors = false;  // sema skips it; its other errors would be follow-ons

  struct Checked {
    std::vector<std::string> dims;   // every named dimension, in order of first declaration
    std::vector<StateInfo> states;
    std::vector<int> outputStmt;     // statement defining each output
  } checked;
};

struct Module {
  std::vector<Recurrence> recurrences;
};

}  // namespace scanforge::dsl
