// How a chunk program's values are laid out and looped over: its ports (ImageParams bound to
// windows of host tensors), storage order and vectorisation, the serial scans of its states, and
// the Funcs it produces. Lowering (Lowering.h) asks it where values live; the program builders
// (ChunkProgram.cpp) ask it for ports, scans and results.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/halide/ChunkProgram.h"
#include "compiler/mlir/Dialect/Scan/Analysis/Ports.h"

namespace scanforge::cpu {

// A state's values over one chunk. func(dims..., t) is the value after step t; the slot just
// before the chunk's first step (t = -1, or t = steps for a reverse scan) holds its start value.
//
// A state that is itself a per-step output (minGRU's h) is scanned straight into the output's
// buffer instead (`output`): its first step is peeled off to read the start value, and there is
// no slot before it, so the chunk's values are not copied out afterwards.
struct StateScan {
  std::string name;
  std::vector<int> dims;  // layout order
  bool reverse = false;
  bool output = false;
  // Values of func: the state's, then the stored nodes its update produces (Graph::carriedBy).
  int values = 1;
  Halide::Func func;
  Halide::ImageParam start;
};

// An injective mapping of port names ("x.grad") to identifiers: '_' -> "__", '.' -> "_d".
std::string sanitize(llvm::StringRef name);

class Schedule {
 public:
  // The forward's ports decide the vector dimension preference, `rec` (the program's recurrence)
  // the dimensions.
  Schedule(const scan::Ports &forward, scan::RecurrenceOp rec);

  ChunkProgram &program() { return program_; }
  const scan::DimTable &table() const { return table_; }
  const Halide::Var &time() const { return t_; }

  // ---- ports ----
  // The ImageParam of a port in `list` (role: its name's prefix), created on first use.
  BoundInput &bind(std::vector<BoundInput> &list, const std::string &role, const scan::Port &port, bool perStep);
  BoundInput &bindStep(const scan::Port &in) { return bind(program_.inputs, "in", in, true); }
  BoundInput &bindParam(const scan::Port &p) { return bind(program_.params, "par", p, false); }
  Halide::Expr load(const BoundInput &in);

  // ---- dimensions and variables ----
  std::vector<int> dimsOf(scan::DimMask mask) const;
  // Halide arguments for dims (in a layout order): the innermost (last) dimension first.
  std::vector<Halide::Expr> args(const std::vector<int> &dims) const;
  std::vector<Halide::Expr> args(const std::vector<int> &dims, Halide::Expr t) const;
  std::vector<Halide::Var> pureVars(const std::vector<int> &dims) const;
  const Halide::Var &var(int dim) const { return vars_[dim]; }
  int vectorDim(scan::DimMask mask) const;
  Halide::Expr steps() const;
  Halide::Expr extent(int dim) const { return extents_.at(dim); }

  // Stores a Func with its vector dimension innermost and vectorises its stage over it.
  void vectorizeStage(Halide::Stage stage, int vectorDim) const;
  void storeVectorFirst(Halide::Func f, const std::vector<int> &dims, bool perStep) const;
  // Loop order for a stage over dims (+ an outer RVar): vector dimension innermost.
  void reorderLoops(Halide::Stage stage, const std::vector<int> &dims, std::optional<Halide::RVar> outer) const;

  // Value i of f(args) for a defined f: the call itself when f has one value, element i of its
  // Tuple otherwise.
  static Halide::Expr element(const Halide::Func &f, const std::vector<Halide::Expr> &args, int i);

  // ---- states ----
  Halide::Expr before(const StateScan &s, Halide::Expr t) const;
  Halide::Expr after(const StateScan &s, Halide::Expr t) const;
  // Value `index` (1, 2, ...: a node the scan carries) of step t.
  Halide::Expr carried(const StateScan &s, int index, Halide::Expr t) const;
  StateScan &newState(std::map<std::string, StateScan> &states, const scan::Port &state, bool reverse,
                      BoundInput &start, const std::string &intoOutput = "");  // see StateScan
  // Whether `state` can be scanned straight into per-step output `out`: the same layout, f32, and
  // a vector dimension innermost in it (the output's storage order is the tensor's).
  bool canScanInto(const scan::Port &state, const scan::Port &out) const;
  // s(t) = a(t) * s(t-1) + b(t), scanned serially in the state's direction; the gate math of a and
  // b is inlined into the update. `carried` (Funcs over (dims..., t) with s.values - 1 values in
  // all, in order; none for a state scanned into an output) are computed in the update's innermost
  // loop, so that a and b read the same values the scan stores as the further values of step t.
  void defineScan(StateScan &s, Halide::Expr a, Halide::Expr b, const std::vector<Halide::Func> &carried = {});

  // ---- results ----
  void addStepOutput(const scan::Port &out, Halide::Expr value, scan::DimMask partialOver);
  // Output `out` is the values of `s`, a state scanned into it (newState's intoOutput).
  void addStateOutput(const scan::Port &out, const StateScan &s, scan::DimMask partialOver);
  void addFinal(const StateScan &s);
  // The chunk's sum over t of value, accumulated in vector-friendly storage and then written out
  // in the parameter's layout.
  void addAccum(const scan::Port &gradient, Halide::Expr value);
  void finish();

 private:
  Halide::Expr startIndex(const StateScan &s) const { return s.reverse ? steps() : Halide::Expr(-1); }
  Halide::Expr firstStep(const StateScan &s) const { return s.reverse ? steps() - 1 : Halide::Expr(0); }
  Halide::Expr previous(const StateScan &s, Halide::Expr t) const { return s.reverse ? t + 1 : t - 1; }
  Halide::Expr value(const StateScan &s, Halide::Expr t) const;  // the state's value of step t
  // defineScan's second update of a reverse scan that carries nothing (or is an output), walked
  // downwards.
  void defineDownwards(StateScan &s, Halide::Func A, Halide::Func B);

  scan::DimTable table_;
  Halide::Var t_;
  std::vector<Halide::Var> vars_;
  std::vector<int> vectorOrder_;
  std::map<int, Halide::Expr> extents_;
  Halide::Expr steps_;
  std::map<std::string, Halide::Func> staged_;
  std::map<std::vector<int>, Halide::Func> stepOutputLoops_;  // the first per-step output of each layout
  ChunkProgram program_;
};

}  // namespace scanforge::cpu
