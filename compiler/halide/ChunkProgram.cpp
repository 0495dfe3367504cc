#include "compiler/halide/ChunkProgram.h"

#include <cstdio>
#include <functional>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

#include "compiler/halide/Graph.h"
#include "compiler/halide/Lowering.h"
#include "compiler/halide/Schedule.h"
#include "compiler/mlir/Dialect/Scan/Analysis/ParallelDims.h"
#include "llvm/ADT/TypeSwitch.h"

namespace scanforge::cpu {
namespace {

using Halide::Expr;

void requireAffine(scan::RecurrenceOp rec) {
  if (!rec.getBodyBlock().getOps<scan::NextOp>().empty())
    throw std::logic_error("recurrence '" + rec.getSymName().str() + "' is not in affine form");
}

// Every value's dimensions, from the module's analyses.
const scan::DimAnalysis *dimsOf(mlir::AnalysisManager analyses, scan::RecurrenceOp rec) {
  const scan::Dims &dims = analyses.getChildAnalysis<scan::Dims>(rec);
  if (!dims.valid()) throw std::logic_error("recurrence '" + rec.getSymName().str() + "' does not verify");
  return &dims.get();
}

// The leaves of a body: ports by name; its states read before and after a step as `before` and
// `after` (the program's own states, or the recomputed forward ones); scan.saved always reads
// the recomputed forward state.
std::function<Leaf(mlir::Operation *)> leavesOf(LeafRole before, LeafRole after) {
  return [=](mlir::Operation *op) {
    return llvm::TypeSwitch<mlir::Operation *, Leaf>(op)
        .Case<scan::InputOp>([](auto in) { return Leaf{LeafRole::Input, in.getName().str()}; })
        .Case<scan::ParamOp>([](auto p) { return Leaf{LeafRole::Param, p.getName().str()}; })
        .Case<scan::PrevOp>([&](auto prev) { return Leaf{before, prev.getName().str()}; })
        .Case<scan::SavedOp>([](auto saved) { return Leaf{LeafRole::ForwardBefore, saved.getName().str()}; })
        .Default([&](mlir::Operation *up) { return Leaf{after, llvm::cast<scan::UpdateOp>(up).getName().str()}; });
  };
}

const scan::Port &portOf(const scan::Ports &ports, scan::PortKind kind, const std::string &name) {
  if (const scan::Port *p = ports.find(kind, name)) return *p;
  throw std::logic_error("no port '" + name + "'");
}

// Resolves leaves to loads of the program recurrence's ports and to its state scans.
Lowering::LeafExpr leafExprs(Schedule &s, const scan::Ports &ports, std::map<std::string, StateScan> &own,
                             std::map<std::string, StateScan> *forward) {
  return [&s, &ports, &own, forward](const Leaf &leaf) -> Expr {
    switch (leaf.role) {
      case LeafRole::Input: return s.load(s.bindStep(portOf(ports, scan::PortKind::Input, leaf.name)));
      case LeafRole::Param: return s.load(s.bindParam(portOf(ports, scan::PortKind::Param, leaf.name)));
      case LeafRole::Before: return s.before(own.at(leaf.name), s.time());
      case LeafRole::State: return s.after(own.at(leaf.name), s.time());
      case LeafRole::ForwardBefore: return s.before(forward->at(leaf.name), s.time());
      case LeafRole::ForwardState: return s.after(forward->at(leaf.name), s.time());
    }
    throw std::logic_error("unknown leaf role");
  };
}

scan::UpdateOp updateOf(const scan::Port &state) { return llvm::cast<scan::UpdateOp>(state.op); }
mlir::Value valueOf(const scan::Port &result) { return result.op->getOperand(0); }  // of an output or accum

// Numbers the a and b of each state update of a body, each root (a definition) in turn.
std::vector<std::pair<int, int>> numberUpdates(Graph &g, const scan::Ports &ports, const Body &body, int &root) {
  std::vector<std::pair<int, int>> updates;  // (a, b) per state
  for (const scan::Port &state : ports.states()) {
    scan::UpdateOp up = updateOf(state);
    updates.push_back({g.number(up.getA(), body), g.number(up.getB(), body)});
    g.markRoot(updates.back().first, root, body.dims.of(up.getResult()), true);
    g.markRoot(updates.back().second, root++, body.dims.of(up.getResult()), true);
  }
  return updates;
}

// Numbers the values of per-step outputs or accumulations, each its own root.
std::vector<int> numberResults(Graph &g, const std::vector<scan::Port> &results, const Body &body, int &root) {
  std::vector<int> ids;
  for (const scan::Port &result : results) {
    ids.push_back(g.number(valueOf(result), body));
    g.markRoot(ids.back(), root++, result.mask, false);
  }
  return ids;
}

// Decides which nodes the scans of `states` (each with its update's (a, b) node ids) produce
// (Graph::carriedBy), in the order defineScans defines them; `carried` collects them over calls,
// `readBefore` what the updates decided so far read. Every scan of a program is decided before
// any is defined (Lowering::carry).
void carryNodes(const Graph &g, Lowering &lower, const std::vector<scan::Port> &states,
                std::map<std::string, StateScan> &scans, const std::vector<std::pair<int, int>> &updates,
                std::set<int> &carried, std::set<int> &readBefore) {
  for (size_t i = 0; i < states.size(); ++i) {
    StateScan &scanned = scans.at(states[i].name);
    if (!scanned.output) {
      std::vector<std::vector<int>> groups =
          g.carriedBy(updates[i].first, updates[i].second, states[i].mask, carried, readBefore);
      lower.carry(scanned, groups);
      for (const std::vector<int> &group : groups) carried.insert(group.begin(), group.end());
    }
    g.collect(updates[i].first, readBefore);
    g.collect(updates[i].second, readBefore);
  }
}

void defineScans(Lowering &lower, const std::vector<scan::Port> &states, std::map<std::string, StateScan> &scans,
                 const std::vector<std::pair<int, int>> &updates) {
  for (size_t i = 0; i < states.size(); ++i)
    lower.defineScan(scans.at(states[i].name), updates[i].first, updates[i].second);
}

}  // namespace

ProgramFacts programFacts(mlir::AnalysisManager analyses, scan::RecurrenceOp fwd, scan::RecurrenceOp bwd) {
  ProgramFacts facts;
  facts.forwardDims = dimsOf(analyses, fwd);
  facts.forwardPorts = &analyses.getChildAnalysis<scan::Ports>(fwd);
  facts.forwardInvariants = &analyses.getChildAnalysis<scan::Invariants>(fwd);
  facts.parallel = &analyses.getChildAnalysis<scan::ParallelDims>(fwd);
  if (!facts.parallel->valid()) throw std::logic_error("recurrence '" + fwd.getSymName().str() + "' does not verify");
  if (bwd) {
    facts.backwardDims = dimsOf(analyses, bwd);
    facts.backwardPorts = &analyses.getChildAnalysis<scan::Ports>(bwd);
    facts.backwardInvariants = &analyses.getChildAnalysis<scan::Invariants>(bwd);
  }
  return facts;
}

ChunkProgram buildForwardProgram(scan::RecurrenceOp fwd, const ProgramFacts &facts) {
  requireAffine(fwd);
  const scan::Ports &ports = *facts.forwardPorts;
  Schedule s(ports, fwd);
  const scan::DimAnalysis &dims = *facts.forwardDims;
  Body body{dims, *facts.forwardInvariants, leavesOf(LeafRole::Before, LeafRole::State)};
  Graph g;
  int root = 0;
  std::vector<std::pair<int, int>> updates = numberUpdates(g, ports, body, root);
  std::vector<int> outputs = numberResults(g, ports.outputs(), body, root);

  g.decide();
  for (const scan::Port &in : ports.inputs()) s.bindStep(in);
  for (const scan::Port &p : ports.params()) s.bindParam(p);
  // Outputs that are a state's values (minGRU's h), each state into the first such output.
  std::map<std::string, size_t> scannedInto;  // state -> output index
  for (size_t i = 0; i < ports.outputs().size(); ++i) {
    const Node &n = g.node(outputs[i]);
    if (n.op || n.leaf.role != LeafRole::State || scannedInto.count(n.leaf.name)) continue;
    if (s.canScanInto(portOf(ports, scan::PortKind::State, n.leaf.name), ports.outputs()[i]))
      scannedInto[n.leaf.name] = i;
  }
  std::map<std::string, StateScan> states;
  for (const scan::Port &state : ports.states())
    s.newState(states, state, fwd.getReverse(), s.bind(s.program().initial, "start", state, false),
               scannedInto.count(state.name) ? ports.outputs()[scannedInto.at(state.name)].name : "");
  Lowering lower(s, g, leafExprs(s, ports, states, nullptr));
  std::set<int> carried, readBefore;
  carryNodes(g, lower, ports.states(), states, updates, carried, readBefore);
  defineScans(lower, ports.states(), states, updates);
  const scan::ParallelDims &parallel = *facts.parallel;
  for (size_t i = 0; i < ports.outputs().size(); ++i) {
    const scan::Port &out = ports.outputs()[i];
    const Node &n = g.node(outputs[i]);
    auto into = n.op ? scannedInto.end() : scannedInto.find(n.leaf.name);
    if (into != scannedInto.end() && into->second == i)
      s.addStateOutput(out, states.at(n.leaf.name), parallel.partialOver(valueOf(out)));
    else
      s.addStepOutput(out, lower.expr(outputs[i]), parallel.partialOver(valueOf(out)));
  }
  for (const scan::Port &state : ports.states()) s.addFinal(states.at(state.name));
  s.program().channelDims = parallel.channelDims();
  s.finish();
  return std::move(s.program());
}

ChunkProgram buildBackwardProgram(scan::RecurrenceOp fwd, scan::RecurrenceOp bwd, const ProgramFacts &facts) {
  requireAffine(fwd);
  requireAffine(bwd);
  // Ports of either recurrence index one dimension table: autodiff gives the backward the forward's dims.
  if (fwd.getDims() != bwd.getDims())
    throw std::logic_error("recurrence '" + bwd.getSymName().str() + "' has other dimensions than its forward");
  const scan::Ports &fwdPorts = *facts.forwardPorts, &ports = *facts.backwardPorts;
  Schedule s(fwdPorts, bwd);
  const scan::DimAnalysis &fwdDims = *facts.forwardDims, &bwdDims = *facts.backwardDims;
  const scan::Invariants &fwdInvariants = *facts.forwardInvariants, &bwdInvariants = *facts.backwardInvariants;
  // The forward body is numbered with its states as the recomputed forward states, so the
  // backward's copy of the gate math (which reads scan.saved) shares its nodes.
  Body fwdBody{fwdDims, fwdInvariants, leavesOf(LeafRole::ForwardBefore, LeafRole::ForwardState)};
  Body bwdBody{bwdDims, bwdInvariants, leavesOf(LeafRole::Before, LeafRole::State)};
  Graph g;
  int root = 0;
  std::vector<std::pair<int, int>> fwdUpdates = numberUpdates(g, fwdPorts, fwdBody, root);
  std::vector<std::pair<int, int>> bwdUpdates = numberUpdates(g, ports, bwdBody, root);
  std::vector<int> outputs = numberResults(g, ports.outputs(), bwdBody, root);
  std::vector<int> accums = numberResults(g, ports.accums(), bwdBody, root);

  g.decide();
  for (const scan::Port &in : ports.inputs()) s.bindStep(in);
  for (const scan::Port &p : ports.params()) s.bindParam(p);
  std::map<std::string, StateScan> forward, adjoint;
  for (const scan::Port &state : fwdPorts.states())
    s.newState(forward, state, fwd.getReverse(), s.bind(s.program().checkpoints, "ckpt", state, false));
  for (const scan::Port &state : ports.states())
    s.newState(adjoint, state, bwd.getReverse(), s.bind(s.program().initial, "start", state, false));
  Lowering lower(s, g, leafExprs(s, ports, adjoint, &forward));
  std::set<int> carried, readBefore;  // the recomputed forward states first: they read no adjoint
  carryNodes(g, lower, fwdPorts.states(), forward, fwdUpdates, carried, readBefore);
  carryNodes(g, lower, ports.states(), adjoint, bwdUpdates, carried, readBefore);
  defineScans(lower, fwdPorts.states(), forward, fwdUpdates);
  defineScans(lower, ports.states(), adjoint, bwdUpdates);
  const scan::ParallelDims &parallel = *facts.parallel;
  for (size_t i = 0; i < ports.outputs().size(); ++i) {
    const scan::Port &out = ports.outputs()[i];
    s.addStepOutput(out, lower.expr(outputs[i]), parallel.partialOver(valueOf(out)));
  }
  for (size_t i = 0; i < ports.accums().size(); ++i) s.addAccum(ports.accums()[i], lower.expr(accums[i]));
  for (const scan::Port &state : ports.states()) s.addFinal(adjoint.at(state.name));
  s.program().channelDims = parallel.channelDims();
  s.finish();
  return std::move(s.program());
}

namespace {
// What `write` puts into a temporary file, read back (Halide writes its texts to files only).
std::string viaFile(const char *what, const std::function<void(const std::string &)> &write) {
  char path[] = "/tmp/scanforge-text-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error(std::string("cannot create a temporary file for the ") + what);
  close(fd);
  write(path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return text.str();
}
}  // namespace

std::string ChunkProgram::loweredStatement() {
  return viaFile("Halide statement", [&](const std::string &path) {
    pipeline.compile_to_lowered_stmt(path, pipeline.infer_arguments(), Halide::Text, target);
  });
}

std::string ChunkProgram::assembly() {
  return viaFile("assembly", [&](const std::string &path) {
    pipeline.compile_to_assembly(path, pipeline.infer_arguments(), "chunk_program", target);
  });
}

}  // namespace scanforge::cpu
