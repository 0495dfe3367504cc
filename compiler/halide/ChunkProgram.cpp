#include "compiler/halide/ChunkProgram.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "compiler/halide/Graph.h"
#include "compiler/halide/Lowering.h"
#include "compiler/halide/Schedule.h"

namespace scanforge::cpu {
namespace {

using Halide::Expr;
using scan::DimMask;

void requireAffine(scan::RecurrenceOp rec) {
  if (!rec.getBodyBlock().getOps<scan::NextOp>().empty())
    throw std::logic_error("recurrence '" + rec.getSymName().str() + "' is not in affine form");
}

DimMask portMask(const Schedule &s, mlir::ArrayAttr dims) { return s.table().mask(dims).value_or(0); }

scan::DimAnalysis analyze(scan::RecurrenceOp rec) {
  mlir::FailureOr<scan::DimAnalysis> dims = scan::DimAnalysis::compute(rec);
  if (mlir::failed(dims)) throw std::logic_error("recurrence '" + rec.getSymName().str() + "' does not verify");
  return std::move(*dims);
}

// Leaf names of a body: ports by name; states by role (the program's own, or recomputed forward).
Graph::LeafKey leafNames(const std::string &prevRole, const std::string &stateRole) {
  return [=](mlir::Operation *op) -> std::string {
    if (auto in = llvm::dyn_cast<scan::InputOp>(op)) return "in:" + in.getName().str();
    if (auto p = llvm::dyn_cast<scan::ParamOp>(op)) return "par:" + p.getName().str();
    if (auto prev = llvm::dyn_cast<scan::PrevOp>(op)) return prevRole + prev.getName().str();
    if (auto saved = llvm::dyn_cast<scan::SavedOp>(op)) return "fwdbefore:" + saved.getName().str();
    return stateRole + llvm::cast<scan::UpdateOp>(op).getName().str();
  };
}

// Resolves leaf names to loads of ports and state scans.
Lowering::Leaf leafExprs(Schedule &s, scan::RecurrenceOp ports, std::map<std::string, StateScan> &own,
                         std::map<std::string, StateScan> *forward) {
  return [&s, ports, &own, forward](const std::string &leaf) mutable -> Expr {
    size_t colon = leaf.find(':');
    std::string role = leaf.substr(0, colon), name = leaf.substr(colon + 1);
    if (role == "in" || role == "par") {
      for (mlir::Operation &op : ports.getBodyBlock()) {
        if (auto in = llvm::dyn_cast<scan::InputOp>(op); in && role == "in" && in.getName() == name) return s.load(s.bindStep(in));
        if (auto p = llvm::dyn_cast<scan::ParamOp>(op); p && role == "par" && p.getName() == name) return s.load(s.bindParam(p));
      }
      throw std::logic_error("no port '" + name + "'");
    }
    if (role == "before") return s.before(own.at(name), s.time());
    if (role == "state") return s.after(own.at(name), s.time());
    if (role == "fwdbefore") return s.before(forward->at(name), s.time());
    return s.after(forward->at(name), s.time());  // fwdstate
  };
}

}  // namespace

ChunkProgram buildForwardProgram(scan::RecurrenceOp fwd) {
  requireAffine(fwd);
  Schedule s(fwd, fwd);
  scan::DimAnalysis dims = analyze(fwd);
  Graph g;
  auto names = leafNames("before:", "state:");
  int root = 0;
  std::vector<std::pair<int, int>> updates;  // (a, b) per state
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    updates.push_back({g.number(up.getA(), dims, names), g.number(up.getB(), dims, names)});
    g.markRoot(updates.back().first, root, dims.of(up.getResult()), true);
    g.markRoot(updates.back().second, root++, dims.of(up.getResult()), true);
  }
  std::vector<int> outputs;
  for (auto out : fwd.getBodyBlock().getOps<scan::OutputOp>()) {
    outputs.push_back(g.number(out.getValue(), dims, names));
    g.markRoot(outputs.back(), root++, portMask(s, out.getDims()), false);
  }

  g.decide();
  for (auto in : fwd.getBodyBlock().getOps<scan::InputOp>()) s.bindStep(in);
  for (auto p : fwd.getBodyBlock().getOps<scan::ParamOp>()) s.bindParam(p);
  std::map<std::string, StateScan> states;
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>())
    s.newState(states, up.getName().str(), up.getName(), up.getDims(), fwd.getReverse(),
               s.bind(s.program().initial, "start", up.getName(), up.getDims(), false, false));
  Lowering lower(s, g, leafExprs(s, fwd, states, nullptr));
  size_t i = 0;
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    s.defineScan(states.at(up.getName().str()), lower.expr(updates[i].first), lower.expr(updates[i].second));
    ++i;
  }
  i = 0;
  for (auto out : fwd.getBodyBlock().getOps<scan::OutputOp>())
    s.addStepOutput(out.getName(), out.getDims(), isBf16(out.getStorage()), lower.expr(outputs[i++]));
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>()) s.addFinal(states.at(up.getName().str()));
  s.finish();
  return std::move(s.program());
}

ChunkProgram buildBackwardProgram(scan::RecurrenceOp fwd, scan::RecurrenceOp bwd) {
  requireAffine(fwd);
  requireAffine(bwd);
  Schedule s(fwd, bwd);
  scan::DimAnalysis fwdDims = analyze(fwd), bwdDims = analyze(bwd);
  Graph g;
  // The forward body is numbered with its states as the recomputed forward states, so the
  // backward's copy of the gate math (which reads scan.saved) shares its nodes.
  auto fwdNames = leafNames("fwdbefore:", "fwdstate:"), bwdNames = leafNames("before:", "state:");
  int root = 0;
  std::vector<std::pair<int, int>> fwdUpdates, bwdUpdates;
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    fwdUpdates.push_back({g.number(up.getA(), fwdDims, fwdNames), g.number(up.getB(), fwdDims, fwdNames)});
    g.markRoot(fwdUpdates.back().first, root, fwdDims.of(up.getResult()), true);
    g.markRoot(fwdUpdates.back().second, root++, fwdDims.of(up.getResult()), true);
  }
  for (auto up : bwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    bwdUpdates.push_back({g.number(up.getA(), bwdDims, bwdNames), g.number(up.getB(), bwdDims, bwdNames)});
    g.markRoot(bwdUpdates.back().first, root, bwdDims.of(up.getResult()), true);
    g.markRoot(bwdUpdates.back().second, root++, bwdDims.of(up.getResult()), true);
  }
  std::vector<int> outputs, accums;
  for (auto out : bwd.getBodyBlock().getOps<scan::OutputOp>()) {
    outputs.push_back(g.number(out.getValue(), bwdDims, bwdNames));
    g.markRoot(outputs.back(), root++, portMask(s, out.getDims()), false);
  }
  for (auto acc : bwd.getBodyBlock().getOps<scan::AccumOp>()) {
    accums.push_back(g.number(acc.getValue(), bwdDims, bwdNames));
    g.markRoot(accums.back(), root++, portMask(s, acc.getDims()), false);
  }

  g.decide();
  for (auto in : bwd.getBodyBlock().getOps<scan::InputOp>()) s.bindStep(in);
  for (auto p : bwd.getBodyBlock().getOps<scan::ParamOp>()) s.bindParam(p);
  std::map<std::string, StateScan> forward, adjoint;
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>())
    s.newState(forward, up.getName().str(), up.getName(), up.getDims(), fwd.getReverse(),
               s.bind(s.program().checkpoints, "ckpt", up.getName(), up.getDims(), false, false));
  for (auto up : bwd.getBodyBlock().getOps<scan::UpdateOp>())
    s.newState(adjoint, up.getName().str(), up.getName(), up.getDims(), bwd.getReverse(),
               s.bind(s.program().initial, "start", up.getName(), up.getDims(), false, false));
  Lowering lower(s, g, leafExprs(s, bwd, adjoint, &forward));
  size_t i = 0;
  for (auto up : fwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    s.defineScan(forward.at(up.getName().str()), lower.expr(fwdUpdates[i].first), lower.expr(fwdUpdates[i].second));
    ++i;
  }
  i = 0;
  for (auto up : bwd.getBodyBlock().getOps<scan::UpdateOp>()) {
    s.defineScan(adjoint.at(up.getName().str()), lower.expr(bwdUpdates[i].first), lower.expr(bwdUpdates[i].second));
    ++i;
  }
  i = 0;
  for (auto out : bwd.getBodyBlock().getOps<scan::OutputOp>())
    s.addStepOutput(out.getName(), out.getDims(), isBf16(out.getStorage()), lower.expr(outputs[i++]));
  i = 0;
  for (auto acc : bwd.getBodyBlock().getOps<scan::AccumOp>())
    s.addAccum(acc.getName(), acc.getDims(), lower.expr(accums[i++]));
  for (auto up : bwd.getBodyBlock().getOps<scan::UpdateOp>()) s.addFinal(adjoint.at(up.getName().str()));
  s.finish();
  return std::move(s.program());
}

std::string ChunkProgram::loweredStatement() {
  char path[] = "/tmp/scanforge-stmt-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file for the Halide statement");
  close(fd);
  pipeline.compile_to_lowered_stmt(path, pipeline.infer_arguments(), Halide::Text, target);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return text.str();
}

}  // namespace scanforge::cpu
