// Turns graph nodes (Graph.h) into Halide expressions over (dims..., t): the math of each op,
// stored nodes as their own Funcs, contractions as reductions. Leaves (ports and states) are
// resolved by the program builder.
#pragma once

#include <functional>
#include <map>
#include <set>

#include "compiler/halide/Graph.h"
#include "compiler/halide/Schedule.h"

namespace scanforge::cpu {

class Lowering {
 public:
  using LeafExpr = std::function<Halide::Expr(const Leaf &)>;

  Lowering(Schedule &s, const Graph &g, LeafExpr leaf) : s_(s), g_(g), leaf_(std::move(leaf)) {}

  Halide::Expr expr(int id);

  // Records that the scan of `s` produces the nodes of `groups` (Graph::carriedBy) as further
  // values of its update: the update computes them, a Func per group, and every other reader reads
  // them from the scan. Call for every state before lowering anything that reads these nodes.
  void carry(StateScan &s, const std::vector<std::vector<int>> &groups);
  // Defines the scan of `s` (Schedule::defineScan) from its update's a and b and its carried nodes.
  void defineScan(StateScan &s, int a, int b);

 private:
  Halide::Expr materialize(int id);
  Halide::Expr compute(int id);
  Halide::Expr contract(const Node &n, llvm::StringRef dimName);
  // exp(-|max(b, 0) - max(a, 0)|) of a ratio of softplus terms over nodes a and b
  // (cpu::sigmoidOfSoftplusDifference's `ed`).
  Halide::Expr expOfScale(int a, int b);

  Schedule &s_;
  const Graph &g_;
  LeafExpr leaf_;
  std::map<int, Halide::Expr> exprs_;
  struct Carrier {
    const StateScan *scan;
    int index;  // of the value in the scan's Tuple
  };
  std::map<const StateScan *, std::vector<std::vector<int>>> groups_;  // carry()'s, in the Tuple's order
  std::map<int, Carrier> carried_;  // where each node of groups_ is
  const StateScan *inUpdate_ = nullptr;  // the scan whose update is being built
  std::map<int, Halide::Expr> updateExprs_;  // its values built on the nodes it carries
  std::set<int> contracting_;  // members of the fused contractions whose terms are being built
  int counter_ = 0;
};

}  // namespace scanforge::cpu
