#include "compiler/halide/Graph.h"

#include <algorithm>

namespace scanforge::cpu {

using mlir::Value;
using scan::DimMask;

int Graph::number(Value v, const Body &body) {
  auto memoKey = std::make_pair(v.getAsOpaquePointer(), static_cast<const void *>(&body));
  auto it = memo_.find(memoKey);
  if (it != memo_.end()) return it->second;
  mlir::Operation *op = v.getDefiningOp();
  Node node;
  node.perStep = !body.invariants.contains(op);
  int id;
  auto sigmoid = llvm::dyn_cast<scan::SigmoidOp>(op);
  if (int ratio = sigmoid ? softplusRatioOf(sigmoid, body) : -1; ratio >= 0) {
    id = ratio;
  } else if (llvm::isa<scan::InputOp, scan::ParamOp, scan::PrevOp, scan::SavedOp, scan::UpdateOp>(op)) {
    node.leaf = body.leaf(op);
    node.dims = body.dims.of(v);
    id = add(leafIds_, node.leaf, node);
  } else {
    node.op = op;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << op->getName().getStringRef();
    for (mlir::NamedAttribute attr : op->getAttrs()) os << " " << attr.getName().getValue() << "=" << attr.getValue();
    for (Value operand : op->getOperands()) {
      int operandId = number(operand, body);
      node.operands.push_back(operandId);
      os << " %" << operandId;
    }
    // g(x) = x >= 0 ? x + 0.5 : sigmoid(x) reads the same sigmoid(x) as its derivative does.
    if (llvm::isa<scan::GOp>(op)) node.operands.push_back(sigmoidOf(op, node.operands.front(), body.dims.of(v)));
    node.dims = body.dims.of(v);
    id = add(opIds_, os.str(), node);
  }
  memo_[memoKey] = id;
  return id;
}

template <class Key>
int Graph::add(std::map<Key, int> &ids, const Key &key, const Node &node) {
  auto [slot, fresh] = ids.emplace(key, static_cast<int>(nodes_.size()));
  if (fresh) nodes_.push_back(node);
  return slot->second;
}

// The key is the one an explicit scan.sigmoid of the operand gets, so the two share a node.
int Graph::sigmoidOf(mlir::Operation *g, int operand, DimMask dims) {
  Node n;
  n.op = g;
  n.sigmoidOnly = true;
  n.operands = {operand};
  n.dims = dims;
  n.perStep = nodes_[operand].perStep;
  return add(opIds_, "scan.sigmoid %" + std::to_string(operand), n);
}

int Graph::softplusRatioOf(scan::SigmoidOp sigmoid, const Body &body) {
  std::optional<std::pair<Value, Value>> ab = scan::softplusDifference(sigmoid);
  if (!ab) return -1;
  int a = number(ab->first, body), b = number(ab->second, body);
  Node n;
  n.op = sigmoid;
  n.softplusRatio = true;
  n.operands = {a, b};
  n.dims = body.dims.of(sigmoid.getResult());
  n.perStep = !body.invariants.contains(sigmoid);
  return add(opIds_, "scan.sigmoid.softplus_ratio %" + std::to_string(a) + " %" + std::to_string(b), n);
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

int Graph::coreOf(int id) const {
  const Node &n = nodes_[id];
  if (!n.op || !(n.sigmoidOnly || llvm::isa<scan::SigmoidOp, scan::SoftplusOp>(n.op))) return -1;
  return magnitudeOf(n.softplusRatio ? std::min(n.operands[0], n.operands[1]) : n.operands[0]);
}

int Graph::magnitudeOf(int id) const {
  const Node &n = nodes_[id];
  return n.op && llvm::isa<mlir::arith::NegFOp>(n.op) ? n.operands[0] : id;
}

void Graph::collect(int id, std::set<int> &seen) const {
  if (!seen.insert(id).second) return;
  for (int operand : nodes_[id].operands) collect(operand, seen);
}

std::vector<std::vector<int>> Graph::carriedBy(int a, int b, DimMask stateDims, const std::set<int> &elsewhere,
                                               const std::set<int> &readBefore) const {
  std::set<int> read;
  collect(a, read);
  collect(b, read);
  for (int id : read) {
    const Node &n = nodes_[id];
    if (elsewhere.count(id) || (!n.op && n.leaf.role != LeafRole::Input && n.leaf.role != LeafRole::Param)) return {};
  }
  std::vector<int> carried;
  std::set<int> cores;
  for (int id : read) {
    const Node &n = nodes_[id];
    if (!stored_[id] || !n.perStep || n.dims != stateDims || readBefore.count(id)) continue;
    carried.push_back(id);
    if (int core = coreOf(id); core >= 0) cores.insert(core);
  }
  // sigmoid(-y) and softplus(±y) beside a carried sigmoid(y) cost the scan only their stores:
  // Lowering builds them from the same exp(-|y|), which their readers would compute again.
  for (size_t id = 0; id < nodes_.size(); ++id) {
    int i = static_cast<int>(id);
    const Node &n = nodes_[id];
    if (cores.count(coreOf(i)) && !n.roots.empty() && n.perStep && n.dims == stateDims && !elsewhere.count(i) &&
        !readBefore.count(i) && std::find(carried.begin(), carried.end(), i) == carried.end())
      carried.push_back(i);
  }
  // A value the update reads from a Func of its own (another stored node, a contraction) must not
  // read a carried one: that Func would read a value computed inside the scan's loop.
  std::set<int> produced(carried.begin(), carried.end());
  for (int id : read) {
    const Node &n = nodes_[id];
    bool ownFunc = (stored_[id] || (n.op && llvm::isa<scan::SumOp>(n.op))) && !produced.count(id);
    if (!ownFunc) continue;
    std::set<int> below;
    for (int operand : n.operands) collect(operand, below);
    for (int c : carried)
      if (below.count(c)) return {};
  }
  std::sort(carried.begin(), carried.end());  // operands are numbered before their users
  // Nodes built from one y form one group, where the first of them is (they read y alone, which
  // precedes it), so that Lowering computes them together, from one exp(-|y|).
  std::vector<std::vector<int>> groups;
  std::map<int, size_t> groupOfCore;
  for (int id : carried) {
    int core = coreOf(id);
    if (core < 0) {
      groups.push_back({id});
      continue;
    }
    auto [it, fresh] = groupOfCore.emplace(core, groups.size());
    if (fresh)
      groups.push_back({id});
    else
      groups[it->second].push_back(id);
  }
  return groups;
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
