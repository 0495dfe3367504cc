#include "compiler/mlir/Target/Cuda/KernelContext.h"

#include "compiler/mlir/Target/Cuda/KernelPrinter.h"

namespace scanforge::cuda {

using mlir::Operation;
using mlir::Value;

std::string conjunction(const std::vector<std::string> &conditions) {
  std::string out;
  for (const std::string &c : conditions)
    if (!c.empty()) out += (out.empty() ? "" : " && ") + c;
  return out;
}
std::string ifGuard(const std::string &guard) { return guard.empty() ? "" : "if (" + guard + ") "; }
std::string guarded(const std::string &guard, const std::string &value) {
  return guard.empty() ? value : guard + " ? " + value + " : 0.0f";
}
// base * extent + offset, leaving out a factor 1 and a term 0.
std::string linear(const std::string &base, const std::string &extent, const std::string &offset) {
  std::string out = extent == "1" ? base : "(" + base + ") * " + extent;
  return offset == "0" ? out : out + " + " + offset;
}
std::string indexed(const std::string &var, const std::string &index) {
  return index.empty() ? var : var + "[" + index + "]";
}
std::string stateVar(const std::string &prefix, int k) { return prefix + std::to_string(k); }
std::string accumVar(size_t k) { return "acc" + std::to_string(k); }

OpList slice(scan::RecurrenceOp rec, llvm::ArrayRef<Operation *> roots) {
  OpSet need;
  std::vector<Operation *> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Operation *op = work.back();
    work.pop_back();
    if (!need.insert(op).second) continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp()) work.push_back(def);
  }
  OpList out;
  for (Operation &op : rec.getBodyBlock())
    if (need.count(&op)) out.push_back(&op);
  return out;
}

namespace {

const char *dtypeOf(const scan::Port &p) { return p.bf16 ? "bf16" : "f32"; }

OpList updatesOf(scan::RecurrenceOp rec, const std::function<bool(llvm::StringRef)> &keep) {
  OpList out;
  for (scan::UpdateOp up : rec.getBodyBlock().getOps<scan::UpdateOp>())
    if (keep(up.getName())) out.push_back(up);
  return out;
}

}  // namespace

KernelContext::KernelContext(KernelKind kind, const RecurrenceInfo &info, const RecurrenceInfo *forward,
                             const scan::ParallelDims &layout, const scan::DimAnalysis &dims,
                             const scan::DimAnalysis *forwardDims, mlir::AnalysisManager analyses)
    : kind(kind),
      info(info),
      fwd(forward),
      layout(layout),
      exprs(dims.table(), layout.channelDims(), layout.contractedDims(), laneDimOf(layout)),
      values(info.op, dims, exprs, "v"),
      invariant(analyses.getChildAnalysis<scan::Invariants>(info.op).ops()) {
  scan::RecurrenceOp rec = info.op;
  stem = kernelStem(rec.getSymName());
  // Blocks of 256 threads; with register dimensions (more registers per thread) 64 in the
  // sequential kernel and 128 in the chunked one. A chunked tile is a block, and each costs its SM
  // a fixed time (DeviceSpec::tileOverhead): blocks of 128 made twice the tiles (minGRU at B=8
  // T=16384: 71.1 -> 78.1 % of copy, predicted), and the selective SSM's tiles of 128 threads
  // instead of 64 took B=8 T=4096 from 5.96 to 5.08 ms (predicted). The sequential kernel keeps 64:
  // when both kernels had blocks of 128, the planner chose one lane and checkpoints every 6 steps
  // at B=64 (6.7 -> 4.2 %, predicted), its step costs (StepCost.cpp) undercounting the lanes' gain;
  // blocks of 256 leave the SSM's recomputed states chunks of 3 steps.
  block = !layout.channelDims() ? 32 : layout.contractedDims() ? (kind == KernelKind::Chunked ? 128 : 64) : 256;
  channels = exprs.formulaExtent(exprs.dimsOf(exprs.channelDims()));
  threads = exprs.laneDim() < 0 ? channels : "(" + channels + ")*$LANES";
  for (Operation &op : rec.getBodyBlock()) fullOps.push_back(&op);
  summaryOps = slice(rec, updatesOf(rec, [](llvm::StringRef) { return true; }));
  if (forward) {
    fwdValues.emplace(forward->op, *forwardDims, exprs, "f");
    fwdInvariant = analyses.getChildAnalysis<scan::Invariants>(forward->op).ops();
    for (const scan::SavedState &s : info.saved())
      if (s.used && (!s.output || (kind == KernelKind::Sequential && oneFloatPerThread(s.state))))
        recomputed.push_back(&s);
    recomputeOps = slice(forward->op, updatesOf(forward->op, [&](llvm::StringRef s) { return isRecomputed(s); }));
  }
  std::string floats;
  for (const scan::SavedState *s : recomputed) {
    slotOffset_[s->state.name] = floats.empty() ? "0" : floats;
    floats += (floats.empty() ? "" : " + ") + exprs.registerCount(s->state.mask);
  }
  warpSums = llvm::any_of(info.outputs, [&](const scan::Port &p) { return warpSummed(p.name); });
  warpCollectives = warpSums || exprs.laneDim() >= 0;
  declareBuffers();
}

// ---- buffers ----

void KernelContext::addBuffer(const std::string &name, BufferRole role, const char *dtype,
                              std::vector<std::string> shape, bool optional) {
  if (bufferIndex_.count(name)) return;
  bufferIndex_[name] = buffers.size();
  buffers.push_back(BufferDesc{name, role, dtype, std::move(shape), optional});
  std::string base = "buf_" + identifier(name), c = base;
  for (int n = 2; takenNames_.count(c); ++n) c = base + "_" + std::to_string(n);
  takenNames_.insert(c);
  cNames_[name] = c;
}

const BufferDesc &KernelContext::buffer(const std::string &name) const { return buffers.at(bufferIndex_.at(name)); }
const std::string &KernelContext::cName(const std::string &buffer) const { return cNames_.at(buffer); }

std::vector<std::string> KernelContext::dimShape(const scan::Port &p, std::vector<std::string> lead) const {
  for (int d : p.layout) lead.push_back(exprs.name(d));
  return lead;
}

std::vector<std::string> KernelContext::chunkShape(const scan::Port &state) const {
  return {"$B", "$NC", exprs.formulaExtent(exprs.dimsOf(state.mask & exprs.registerDims())), channels};
}

void KernelContext::declareBuffers() {
  bool backward = fwd != nullptr;
  for (const scan::Port &p : info.inputs) addBuffer(p.name, BufferRole::Input, dtypeOf(p), dimShape(p, {"$B", "$T"}));
  if (backward)  // the recomputation reads forward inputs (the backward declares them all too)
    for (const scan::Port &p : fwd->inputs) addBuffer(p.name, BufferRole::Input, dtypeOf(p), dimShape(p, {"$B", "$T"}));
  for (const scan::Port &p : info.params) addBuffer(p.name, BufferRole::Param, "f32", dimShape(p, {}));
  if (backward)
    for (const scan::Port &p : fwd->params) addBuffer(p.name, BufferRole::Param, "f32", dimShape(p, {}));
  for (const scan::SavedState &s : info.saved()) {
    if (!s.used) continue;
    // The same buffers for both kinds of kernel (one manifest entry per recurrence).
    if (s.output) {
      addBuffer(s.output->name, BufferRole::ForwardOutput, "f32", dimShape(*s.output, {"$B", "$T"}));
      addBuffer(initialOf(s.state.name), BufferRole::ForwardInitialState, "f32", dimShape(s.state, {"$B"}), true);
    }
    if (!s.output || oneFloatPerThread(s.state))
      addBuffer(checkpointsOf(s.state.name), BufferRole::Checkpoint, "f32", chunkShape(s.state));
  }
  for (const scan::Port &p : info.outputs) {
    addBuffer(p.name, BufferRole::Output, dtypeOf(p), dimShape(p, {"$B", "$T"}));
    // Rows of the warps' sums (none with $ATOMIC = 1), or the buffer terms are added into atomically.
    if (warpSummed(p.name))
      addBuffer(warpPartialsOf(p.name), BufferRole::Workspace, "f32",
                dimShape(p, {"(1-" + std::string(kAtomicSumsVariable) + ")*" + warpRows(), "$B", "$T"}));
    if (partialOutput(p.name)) {
      if (p.bf16) addBuffer(f32SumOf(p.name), BufferRole::Workspace, "f32", dimShape(p, {"$B", "$T"}));
      zeroInit.push_back(atomicBuffer(p));
    }
  }
  for (const scan::Port &p : info.accums) {
    addBuffer(p.name, BufferRole::Accum, "f32", dimShape(p, {}));
    zeroInit.push_back(p.name);  // slices of a batch beyond the grid's limit add to it in turn
    std::string registers = exprs.formulaExtent(exprs.dimsOf(p.mask & exprs.registerDims()));
    addBuffer(sequencePartialsOf(p.name), BufferRole::Workspace, "f32", {"$B", channels, registers});
    addBuffer(chunkPartialsOf(p.name), BufferRole::Workspace, "f32", {"$B", "$NC", channels, registers});
  }
  for (const scan::Port &s : info.states) {
    addBuffer(initialOf(s.name), BufferRole::InitialState, "f32", dimShape(s, {"$B"}), true);
    addBuffer(finalOf(s.name), BufferRole::FinalState, "f32", dimShape(s, {"$B"}), true);
    // A forward's state before each chunk, kept by the caller for the backward (optional).
    if (!backward) addBuffer(checkpointsOf(s.name), BufferRole::Checkpoint, "f32", chunkShape(s), true);
    for (const std::string &name : {chunkDecayOf(s.name), chunkLocalOf(s.name), chunkEndOf(s.name)})
      addBuffer(name, BufferRole::Workspace, "f32", chunkShape(s));
  }
  addBuffer(chainBuffer(), BufferRole::Workspace, "i32", {chainLength()});
  zeroInit.push_back(chainBuffer());
}

std::string KernelContext::warpRows() const { return "cdiv(" + threads + ", 32)"; }
std::string KernelContext::channelBlocks() const { return "cdiv(" + threads + ", " + std::to_string(block) + ")"; }
// A ticket counter, then one flag per tile (channel block, batch element, chunk).
std::string KernelContext::chainLength() const { return "1+" + channelBlocks() + "*$B*$NC"; }

// ---- recomputation ----

bool KernelContext::isRecomputed(llvm::StringRef state) const {
  return llvm::any_of(recomputed, [&](const scan::SavedState *s) { return s->state.name == state; });
}

bool KernelContext::needsRecompute(const OpList &ops) const {
  return llvm::any_of(ops, [&](Operation *op) {
    auto saved = llvm::dyn_cast<scan::SavedOp>(op);
    return saved && isRecomputed(saved.getName());
  });
}

std::string KernelContext::recomputeFloats() const {
  std::string floats;
  for (const scan::SavedState *s : recomputed) floats += (floats.empty() ? "" : " + ") + exprs.registerCount(s->state.mask);
  return floats;
}

std::string KernelContext::recomputeBytesPerStep() const {
  if (recomputed.empty()) return "0";
  std::string floats;
  for (const scan::SavedState *s : recomputed)
    floats += (floats.empty() ? "" : "+") + exprs.formulaRegisterCount(s->state.mask);
  return std::to_string(block * 4) + "*(" + floats + ")";
}

std::string KernelContext::stateRegisters() const {
  std::string floats;
  auto add = [&](const scan::Port &state) { floats += (floats.empty() ? "" : "+") + exprs.formulaRegisterCount(state.mask); };
  for (const scan::Port &s : info.states) add(s);
  for (const scan::SavedState *s : recomputed) add(s->state);
  return floats.empty() ? "0" : floats;
}

// Shared memory holds, per thread, the recomputed forward states of each step of the chunk; the
// thread index is fastest, so a warp's accesses fall in distinct banks.
std::string KernelContext::slotElement(const scan::Port &state, const std::string &slot) const {
  std::string index = exprs.registerIndex(state.mask);
  std::string within = slotOffset_.at(state.name) + (index.empty() ? "" : " + " + index);
  return "sf_smem[((" + slot + ") * sf_recompute_floats + " + within + ") * " + std::to_string(block) +
         " + threadIdx.x]";
}

namespace {
std::string stashElement(const StashSlot &slot, const std::string &step, int block) {
  const char *array = slot.bf16 ? "sf_stash16" : "sf_stash";
  const char *count = slot.bf16 ? "sf_stash_halves" : "sf_stash_floats";
  return std::string(array) + "[((" + step + ") * " + count + " + " + std::to_string(slot.index) + ") * " +
         std::to_string(block) + " + threadIdx.x]";
}
}  // namespace

std::string KernelContext::stashRead(const StashSlot &slot, const std::string &step) const {
  std::string element = stashElement(slot, step, block);
  return slot.bf16 ? "sf_widen(" + element + ")" : element;
}

std::string KernelContext::stashWrite(const StashSlot &slot, const std::string &step, const std::string &value) const {
  return stashElement(slot, step, block) + " = " + (slot.bf16 ? "sf_bf16_exact(" + value + ")" : value) + ";";
}

// ---- ports, offsets and guards ----

const scan::Port &KernelContext::port(const std::vector<scan::Port> &list, llvm::StringRef name) const {
  return *llvm::find_if(list, [&](const scan::Port &p) { return p.name == name; });
}

const scan::Port &KernelContext::param(scan::ParamOp p) const {
  for (const scan::Port &d : info.params)
    if (d.name == p.getName()) return d;
  return port(fwd->params, p.getName());
}

bool KernelContext::partialOutput(const std::string &name) const {
  for (scan::OutputOp out : scan::RecurrenceOp(info.op).getBodyBlock().getOps<scan::OutputOp>())
    if (out.getName() == name) return layout.partialOver(out.getValue()) != 0;
  return false;
}

bool KernelContext::warpSummed(const std::string &name) const {
  return partialOutput(name) && !(port(info.outputs, name).mask & exprs.channelDims());
}

std::string KernelContext::outputBuffer(const scan::Port &output) const {
  if (warpSummed(output.name)) return warpPartialsOf(output.name);
  return partialOutput(output.name) ? atomicBuffer(output) : output.name;
}

std::string KernelContext::atomicBuffer(const scan::Port &output) const {
  return output.bf16 ? f32SumOf(output.name) : output.name;
}

size_t KernelContext::accumIndex(llvm::StringRef name) const {
  return static_cast<size_t>(llvm::find_if(info.accums, [&](const scan::Port &p) { return p.name == name; }) -
                             info.accums.begin());
}

std::vector<scan::AccumOp> KernelContext::accumOps() const {
  auto ops = scan::RecurrenceOp(info.op).getBodyBlock().getOps<scan::AccumOp>();
  return {ops.begin(), ops.end()};
}

std::string KernelContext::rowOffset(const scan::Port &p, const std::string &t) const {
  return linear("sf_bT + " + t, exprs.extent(p.layout), exprs.offset(p.layout));
}

std::string KernelContext::rowThreadOffset(const scan::Port &p, const std::string &t) const {
  return linear("sf_bT + " + t, exprs.extent(p.layout), exprs.threadOffset(p.layout));
}

std::string KernelContext::rowRegisterOffset(const scan::Port &p) const { return exprs.registerOffset(p.layout); }

std::string KernelContext::stateOffset(const scan::Port &s) const {
  return linear("(long long)b", exprs.extent(s.layout), exprs.offset(s.layout));
}

std::string KernelContext::chunkOffset(const scan::Port &s, const std::string &chunk) const {
  std::string count = exprs.elementCount(s.mask), index = exprs.elementIndex(s.mask);
  std::string first = "(long long)b * NC + " + chunk;
  std::string row = count == "1" ? first : linear(first, count, index);
  return linear(row, "sf_channels", "sf_q");
}

std::string KernelContext::chunkStride(const scan::Port &s) const {
  std::string count = exprs.elementCount(s.mask);
  return count == "1" ? "sf_channels" : "(" + count + ") * sf_channels";
}

// Threads that would write the same element (they differ only in channel dimensions the port
// lacks, and that are not summed over, or in the lane dimension it lacks) leave it to the one at
// index 0; with warp collectives, lanes past the last channel write nothing.
std::string KernelContext::guardFor(DimMask port, DimMask partial, bool collectives) const {
  std::vector<std::string> conditions;
  if (collectives) conditions.push_back("sf_active");
  conditions.push_back(laneGuard(port));
  for (int d : exprs.dimsOf(exprs.channelDims() & ~port & ~partial)) conditions.push_back(exprs.indexExpr(d) + " == 0");
  return conjunction(conditions);
}

std::string KernelContext::partialSumOffset(const scan::Port &accum, const std::string &slot) const {
  std::string index = exprs.elementIndex(accum.mask);
  return linear(linear(slot, "sf_channels", "sf_q"), exprs.elementCount(accum.mask), index.empty() ? "0" : index);
}

std::string KernelContext::laneGuard(DimMask port) const {
  return exprs.laneDim() >= 0 && !(port & exprs.laneMask()) ? "sf_lane == 0" : "";
}

// The register dimension dealt to lanes: the first contracted one (the selective SSM's n, linear
// attention's k). Any one would be exact; the others stay whole in every lane.
int laneDimOf(const scan::ParallelDims &layout) {
  return layout.contractedDims() ? llvm::countr_zero(layout.contractedDims()) : -1;
}

std::string KernelContext::stateElement(const std::string &var, const scan::Port &s) const {
  return indexed(var, exprs.registerIndex(s.mask));
}

}  // namespace scanforge::cuda
