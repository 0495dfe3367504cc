// The expression graph of a chunk program. Values of the forward body (recomputed in a backward
// program) and of the backward body are numbered structurally, so the backward's copy of the gate
// math and the forward recompute share one node. Expensive nodes used by several definitions are
// computed once per chunk; expensive nodes that do not change over time are computed once per call.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/mlir/Dialect/Scan/Analysis/Invariants.h"
#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"

namespace scanforge::cpu {

// A port or state value read by a body. A backward program's copy of the forward body reads its
// states as the recomputed forward states (ForwardBefore/ForwardState), which is also what the
// backward's scan.saved reads, so both bodies share the nodes built on them.
enum class LeafRole { Input, Param, Before, State, ForwardBefore, ForwardState };
struct Leaf {
  LeafRole role = LeafRole::Input;
  std::string name;
  bool operator<(const Leaf &o) const { return std::tie(role, name) < std::tie(o.role, o.name); }
};

// What numbering a body needs: its values' dimensions, its loop invariants, and its leaves.
struct Body {
  const scan::DimAnalysis &dims;
  const scan::Invariants &invariants;
  std::function<Leaf(mlir::Operation *)> leaf;
};

struct Node {
  mlir::Operation *op = nullptr;  // null for leaves
  Leaf leaf;                      // when op is null
  std::vector<int> operands;
  scan::DimMask dims = 0;
  bool perStep = false;  // changes over time: not a loop invariant (scan::Invariants)
  std::set<int> roots;   // the definitions (state updates, outputs, accumulations) that read it
  scan::DimMask loops = 0;     // the dimensions of the loops it is evaluated in
  bool feedsScan = false;      // read by a state update
  bool sigmoidOnly = false;    // the sigmoid inside g(x), shared with an explicit sigmoid(x)
  // sigmoid(softplus(a) - softplus(b)) over operands {a, b} (scan::softplusDifference): minLSTM's
  // normalised gate f / (f + i), lowered as one quotient without softplus's logarithms.
  bool softplusRatio = false;
};

class Graph {
 public:
  // Numbers a value of a body.
  int number(mlir::Value v, const Body &body);

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
  // The y of sigmoid(±y) and softplus(±y), which Lowering builds from one exp(-|y|); for
  // sigmoid(softplus(±a) - softplus(±b)), the y of whichever of a and b was numbered first (the
  // gate and its complement swap them), so both, and sigmoid(±y), are built together; -1 for other
  // nodes.
  int coreOf(int id) const;
  // y for a node -y, else the node itself: exp(-|y|) is built from y, shared by both signs.
  int magnitudeOf(int id) const;

  // The nodes a state's scan produces itself, as further values of its update (a Tuple), instead
  // of a loop nest of their own that writes them for later loop nests to read back: the stored
  // per-step nodes of the state's dimensions that its a and b read, and the sigmoid(±y) and
  // softplus(±y) that share exp(-|y|) with one of them. None when a or b reads a state or a node
  // another scan produces (`elsewhere`): the scan then depends on ports only, so no reader of its
  // values (other scans included) can be in a cycle with it. Nor does it carry a node that a scan
  // defined before it reads (`readBefore`): that scan would call this one's Func before it exists
  // (z[d] read by the updates of s0[d, n], defined first, and of s1[d]). In groups, operands first:
  // the nodes built from one y (coreOf) are one group, the others one each.
  std::vector<std::vector<int>> carriedBy(int a, int b, scan::DimMask stateDims, const std::set<int> &elsewhere,
                                          const std::set<int> &readBefore) const;
  // Adds id and every node it reads, directly or through others, to seen.
  void collect(int id, std::set<int> &seen) const;

 private:
  // The id of the node under `key`, adding `node` there when there is none.
  template <class Key>
  int add(std::map<Key, int> &ids, const Key &key, const Node &node);
  int sigmoidOf(mlir::Operation *g, int operand, scan::DimMask dims);
  // The node of `sigmoid` when it is sigmoid(softplus(a) - softplus(b)), else -1.
  int softplusRatioOf(scan::SigmoidOp sigmoid, const Body &body);
  bool reads(int id, int target) const;

  std::vector<Node> nodes_;
  std::map<Leaf, int> leafIds_;
  std::map<std::string, int> opIds_;  // an op's name, attributes and operand ids
  std::map<std::pair<const void *, const void *>, int> memo_;
  std::vector<bool> costly_, stored_;
};

}  // namespace scanforge::cpu
