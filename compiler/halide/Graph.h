// The expression graph of a chunk program. Values of the forward body (recomputed in a backward
// program) and of the backward body are numbered structurally, so the backward's copy of the gate
// math and the forward recompute share one node. Expensive nodes used by several definitions are
// computed once per chunk; expensive nodes that do not change over time are computed once per call.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"

namespace scanforge::cpu {

struct Node {
  mlir::Operation *op = nullptr;  // null for leaves
  std::string leaf;               // "in:x", "par:p", "before:s", "state:s", "fwdbefore:s", "fwdstate:s"
  std::vector<int> operands;
  scan::DimMask dims = 0;
  bool perStep = false;  // reads an input or a state
  std::set<int> roots;   // the definitions (state updates, outputs, accumulations) that read it
  scan::DimMask loops = 0;     // the dimensions of the loops it is evaluated in
  bool feedsScan = false;      // read by a state update
  bool sigmoidOnly = false;    // the sigmoid inside g(x), shared with an explicit sigmoid(x)
};

class Graph {
 public:
  using LeafKey = std::function<std::string(mlir::Operation *)>;

  // Numbers a value of a body; `leaf` names its port and state leaves.
  int number(mlir::Value v, const scan::DimAnalysis &dims, const LeafKey &leaf);

  // Records that definition `root`, which loops over `loops`, reads node `id`. The operand of a
  // contraction is evaluated in loops over the operand's own dimensions.
  void markRoot(int id, int root, scan::DimMask loops, bool scanRoot);

  // Contractions over the same dimension with the same result shape that feed only outputs and
  // accumulations, and do not read one another, are computed in one pass (a Tuple reduction).
  std::vector<int> fusedWith(int id) const;

  const Node &node(int id) const { return nodes_[id]; }

  // Decides, operands first, which nodes are computed once and stored: those that still
  // contain a transcendental function (not counting ones inside stored operands) and would
  // otherwise be computed repeatedly: shared by several definitions, constant over time, or
  // evaluated inside loops over dimensions they do not have.
  void decide();
  bool materialized(int id) const { return stored_[id]; }

 private:
  int sigmoidOf(mlir::Operation *g, int operand, scan::DimMask dims);
  bool reads(int id, int target) const;

  std::vector<Node> nodes_;
  std::map<std::string, int> ids_;
  std::map<std::pair<const void *, const void *>, int> memo_;
  std::vector<bool> costly_, stored_;
};

}  // namespace scanforge::cpu
