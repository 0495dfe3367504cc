#include "compiler/halide/Graph.h"

#include <algorithm>

namespace scanforge::cpu {

using mlir::Value;
using scan::DimMask;

int Graph::number(Value v, const scan::DimAnalysis &dims, const LeafKey &leaf) {
  auto memoKey = std::make_pair(v.getAsOpaquePointer(), static_cast<const void *>(&dims));
  auto it = memo_.find(memoKey);
  if (it != memo_.end()) return it->second;
  mlir::Operation *op = v.getDefiningOp();
  Node node;
  std::string key;
  if (llvm::isa<scan::InputOp, scan::ParamOp, scan::PrevOp, scan::SavedOp, scan::UpdateOp>(op)) {
    node.leaf = leaf(op);
    key = node.leaf;
    node.perStep = node.leaf.rfind("par:", 0) != 0;
  } else {
    node.op = op;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << op->getName().getStringRef();
    for (mlir::NamedAttribute attr : op->getAttrs()) os << " " << attr.getName().getValue() << "=" << attr.getValue();
    for (Value operand : op->getOperands()) {
      int id = number(operand, dims, leaf);
      node.operands.push_back(id);
      node.perStep |= nodes_[id].perStep;
      os << " %" << id;
    }
    key = os.str();
    // g(x) = x >= 0 ? x + 0.5 : sigmoid(x) reads the same sigmoid(x) as its derivative does.
    if (llvm::isa<scan::GOp>(op)) node.operands.push_back(sigmoidOf(op, node.operands.front(), dims.of(v)));
  }
  node.dims = dims.of(v);
  auto [slot, fresh] = ids_.emplace(key, static_cast<int>(nodes_.size()));
  if (fresh) nodes_.push_back(node);
  memo_[memoKey] = slot->second;
  return slot->second;
}

int Graph::sigmoidOf(mlir::Operation *g, int operand, DimMask dims) {
  auto [slot, fresh] = ids_.emplace("scan.sigmoid %" + std::to_string(operand), static_cast<int>(nodes_.size()));
  if (fresh) {
    Node n;
    n.op = g;
    n.sigmoidOnly = true;
    n.operands = {operand};
    n.dims = dims;
    n.perStep = nodes_[operand].perStep;
    nodes_.push_back(n);
  }
  return slot->second;
}

void Graph::markRoot(int id, int root, DimMask loops, bool scanRoot) {
  Node &n = nodes_[id];
  bool fresh = n.roots.insert(root).second;
  if (!fresh && (n.loops | loops) == n.loops && (n.feedsScan || !scanRoot)) return;
  n.loops |= loops;
  n.feedsScan |= scanRoot;
  bool contraction = n.op && llvm::isa<scan::SumOp>(n.op);
  for (int operand : n.operands) markRoot(operand, root, contraction ? nodes_[operand].dims : loops, scanRoot);
}

std::vector<int> Graph::fusedWith(int id) const {
  const Node &n = nodes_[id];
  if (n.feedsScan) return {id};
  auto sum = llvm::cast<scan::SumOp>(n.op);
  std::vector<int> group;
  for (size_t other = 0; other < nodes_.size(); ++other) {
    const Node &o = nodes_[other];
    if (o.roots.empty() || o.feedsScan || !o.op || o.dims != n.dims || o.perStep != n.perStep) continue;
    auto otherSum = llvm::dyn_cast<scan::SumOp>(o.op);
    if (!otherSum || otherSum.getDim() != sum.getDim()) continue;
    bool independent = true;
    for (int member : group) independent &= !reads(member, static_cast<int>(other)) && !reads(static_cast<int>(other), member);
    if (independent) group.push_back(static_cast<int>(other));
  }
  if (std::find(group.begin(), group.end(), id) == group.end()) return {id};
  return group;
}

bool Graph::reads(int id, int target) const {
  if (id == target) return true;
  for (int operand : nodes_[id].operands)
    if (reads(operand, target)) return true;
  return false;
}

void Graph::decide() {
  costly_.assign(nodes_.size(), false);
  stored_.assign(nodes_.size(), false);
  for (size_t id = 0; id < nodes_.size(); ++id) {
    const Node &n = nodes_[id];
    if (!n.op || llvm::isa<mlir::arith::ConstantOp>(n.op)) continue;
    bool costly = n.sigmoidOnly || llvm::isa<mlir::math::ExpOp, mlir::math::LogOp, mlir::math::TanhOp,
                                             mlir::math::SqrtOp, scan::SigmoidOp, scan::SoftplusOp>(n.op);
    for (int operand : n.operands) costly |= costly_[operand] && !stored_[operand];
    costly_[id] = costly;
    stored_[id] = costly && (n.roots.size() > 1 || !n.perStep || (n.loops & ~n.dims) != 0);
  }
}

}  // namespace scanforge::cpu
