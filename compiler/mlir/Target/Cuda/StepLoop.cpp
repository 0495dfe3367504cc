#include "compiler/mlir/Target/Cuda/StepLoop.h"

#include <map>

namespace scanforge::cuda {

using mlir::Operation;
using mlir::Value;

std::string stashValueKey(const ValuePrinter &values, Value v) { return "value " + values.var(v); }

OpList liveOps(const OpList &ops, Mode mode, const OpSet &leaves) {
  OpSet live;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    Operation *op = *it;
    bool sink = llvm::isa<scan::UpdateOp>(op) || (mode == Mode::Full && llvm::isa<scan::OutputOp, scan::AccumOp>(op));
    bool used = llvm::any_of(op->getUsers(), [&](Operation *user) { return live.count(user) > 0 && !leaves.count(user); });
    if (sink || used) live.insert(op);
  }
  OpList out;
  for (Operation *op : ops)
    if (live.count(op)) out.push_back(op);
  return out;
}

namespace {

// The most floats a batch of scalar inputs may load (batchSteps per input) for the loop of whole
// batches (StepPrinter::print); a forward's batch with register arrays, kWholeArrayBatchFloats.
constexpr int kWholeBatchFloats = 48, kWholeArrayBatchFloats = 64;

// A tensor a step loop reads at every step, in batches of steps.
struct StepLoad {
  Value value;
  const ValuePrinter *values;  // value's recurrence: the loop's, or the kernel's own (a folded summary)
  const scan::Port *input = nullptr;   // an input tensor [B, T, dims]
  const scan::SavedState *saved = nullptr;  // or a forward state kept in a forward output
};

// The same tensor element at the same step whichever walk loads it: an input by its name (a
// backward's recompute walk reads the forward's inputs under the same names), a saved state by its.
std::string stashKey(const StepLoad &l) { return l.input ? l.input->name : "saved " + l.saved->state.name; }

std::vector<StepLoad> stepLoads(const KernelContext &k, const StepLoop &loop) {
  std::vector<StepLoad> loads;
  auto collect = [&](const OpList &ops, const RecurrenceInfo &info, const ValuePrinter &values, bool once) {
    for (Operation *op : ops) {
      StepLoad load{Value(), &values};
      if (auto in = llvm::dyn_cast<scan::InputOp>(op))
        load = {in.getResult(), &values, &k.port(info.inputs, in.getName()), nullptr};
      if (auto saved = llvm::dyn_cast<scan::SavedOp>(op))
        for (const scan::SavedState &s : k.info.saved())
          if (s.state.name == saved.getName() && s.used && !k.isRecomputed(s.state.name)) load = {saved.getResult(), &values, nullptr, &s};
      if (!load.value) continue;
      // A folded summary's input that the walk loads already is read from the walk's load.
      if (once && llvm::any_of(loads, [&](const StepLoad &l) { return stashKey(l) == stashKey(load); })) continue;
      loads.push_back(load);
    }
  };
  collect(loop.ops, *loop.info, *loop.values, false);
  collect(loop.foldedSummary, k.info, k.values, true);
  return loads;
}

class StepPrinter {
 public:
  StepPrinter(CodeWriter &w, const KernelContext &k, const StepLoop &loop, bool collectives)
      : w_(w), k_(k), loop_(loop), vp_(*loop.values), collectives_(collectives), printed_(loop.ops.begin(), loop.ops.end()) {}

  void print() {
    std::vector<StepLoad> loads;  // from memory: those not read back from the stash
    for (const StepLoad &l : steps_)
      if (!loop_.stashReads.count(stashKey(l))) loads.push_back(l);
    // Batches of steps for scalar inputs; with register arrays, as many steps as keep a batch's
    // floats per input within one batch of scalars (one step when the arrays alone exceed it).
    DimMask arrays = 0;
    for (const StepLoad &l : loads) arrays |= l.values->dimsOf(l.value) & k_.exprs.registerDims();
    std::string steps = std::to_string(loop_.batchSteps), count = k_.exprs.registerCount(arrays);
    std::string batch = !arrays ? steps : "sf_batch";
    w_.open("");
    if (arrays) w_.line("constexpr int sf_batch = " + count + " >= " + steps + " ? 1 : " + steps + " / " + count + ";");
    w_.line("const int sf_len = sf_hi - sf_lo;");
    // Batches wholly inside the chunk run without bounds (no clamped load indices) and the chunk's
    // last, partial batch, if any, runs after that loop with them: ptxas then walks each input's
    // addresses with one add per load instead of a 64-bit multiply-add per clamped index (minGRU's
    // bf16 forward loop, sm_90: 1088 -> 858 SASS instructions per 16 steps, with sf_g branch-free).
    // The walk keeps addresses live, so a batch of many loads keeps the bounds: at 64 floats per
    // batch the GLU RNN's reverse backward spilled on sm_80 at the 128-register cap. Batches of
    // register arrays (a few steps each) run whole too, since their loads take immediate offsets
    // from one row pointer (printBatch). The partial batch stays out of the loop, so the loop is
    // what the SASS facts (tools/gpu/sass) take as the kernel's hot loop.
    w_.line("int sf_i0 = 0;");
    // A forward's loop with register arrays runs whole batches up to kWholeArrayBatchFloats: the
    // selective SSM's sequential forward (x, dt, B[n], C[n]; 64) at 16 lanes, 1414 -> 985 SASS
    // instructions per 16 steps in 103 registers, its pair's forward at B=64 T=512 with 2 lanes 0.955
    // -> 0.812 ms (predicted, H100). Not a backward's, which holds two states per element: linear
    // attention's backward at B=64 T=4096 16.1 -> 17.7 ms, the SSM's 128 -> 139 registers.
    int floats = static_cast<int>(loads.size()) * loop_.batchSteps;
    bool whole = floats <= kWholeBatchFloats || (arrays && !k_.fwd && floats <= kWholeArrayBatchFloats);
    if (whole) {
      // Outputs are written through row pointers too, each carried from batch to batch: computed
      // in the batch, ptxas recomputed it (a 64-bit multiply-add) inside each step's branch.
      if (loop_.mode == Mode::Full)
        for (Operation *op : loop_.ops)
          if (auto out = llvm::dyn_cast<scan::OutputOp>(op); out && rowCarried(out)) {
            const scan::Port &p = k_.port(k_.info.outputs, out.getName());
            std::string buf = k_.cName(k_.outputBuffer(p));
            if (!carriedRows_.emplace(buf, &p).second) continue;
            w_.line(std::string(p.bf16 ? "sf_bf16" : "float") + " *" + outputRow(buf) + " = " + buf + " + " +
                    k_.rowThreadOffset(p, loop_.descending ? "sf_hi - 1" : "sf_lo") + ";");
          }
      w_.open("for (; sf_i0 + " + batch + " <= sf_len; sf_i0 += " + batch + ")");
      printBatch(loads, batch, true);
      for (auto &[buf, p] : carriedRows_)
        w_.line(outputRow(buf) + (loop_.descending ? " -= " : " += ") +
                linear("(long long)" + batch, k_.exprs.extent(p->layout), "0") + ";");
      carriedRows_.clear();  // the partial batch below computes its addresses per step
      w_.close();
    }
    w_.open(whole ? "if (sf_i0 < sf_len)" : "for (; sf_i0 < sf_len; sf_i0 += " + batch + ")");
    printBatch(loads, batch, false);
    w_.close().close();
  }

 private:
  // One batch of steps from sf_i0: loads, then the steps. `whole`: all inside the chunk.
  void printBatch(const std::vector<StepLoad> &loads, const std::string &batch, bool whole) {
    if (!loads.empty()) {
      // The batch's loads are issued back to back, before any of them is used: the first use waits
      // for the load's scoreboard, which counts every load issued before it, so loads issued a few
      // steps ahead of their use (a ring) would still cost a memory latency per step. Past the
      // chunk's end the last step is loaded again (an L1 hit), so the loads need no predicate.
      for (const StepLoad &l : loads) {
        std::string count = k_.exprs.registerCount(l.values->dimsOf(l.value));
        w_.line("float " + batchOf(l) + "[" + batch + "]" + (count == "1" ? "" : "[" + count + "]") + ";");
      }
      // A whole batch loads each input from one address per thread, the row of the batch's first
      // step: the steps' and registers' distances from it are constants once the loops are
      // unrolled, which ptxas folds into the loads (immediate offsets) instead of computing a
      // 64-bit address per load.
      if (whole)
        for (const StepLoad &l : loads)
          if (l.input)
            w_.line(std::string("const ") + (l.input->bf16 ? "sf_bf16" : "float") + " *" + rowOf(l) + " = " +
                    k_.cName(l.input->name) + " + " + k_.rowThreadOffset(*l.input, stepTime("sf_i0")) + ";");
      w_.line("#pragma unroll");
      w_.open("for (int sf_j = 0; sf_j < " + batch + "; ++sf_j)");
      if (!whole || llvm::any_of(loads, [](const StepLoad &l) { return !l.input; }))
        w_.line("const int sf_t = " + stepTime(whole ? "sf_i0 + sf_j" : "sf_min(sf_i0 + sf_j, sf_len - 1)") + ";");
      for (const StepLoad &l : loads) printLoad(l, "sf_t", whole);
      w_.close();
    }
    w_.line("#pragma unroll");
    w_.open("for (int sf_j = 0; sf_j < " + batch + "; ++sf_j)");
    w_.line("const int sf_i = sf_i0 + sf_j;");
    if (!whole) w_.open("if (sf_i < sf_len)");
    w_.line("const int t = " + stepTime("sf_i") + ";");
    // Always true in a whole batch, but not provably so: the branches keep ptxas from starting the
    // steps' math before the batch's last load is issued. Without them the loop above was 699
    // instructions, but 8 of its 32 loads came after the math began: a second wait per batch.
    if (whole) w_.open(loop_.descending ? "if (t >= 0)" : "if (t < T)");
    for (const StepLoad &l : steps_) {
      std::string key = stashKey(l);
      const ValuePrinter &values = *l.values;
      if (auto read = loop_.stashReads.find(key); read != loop_.stashReads.end()) {
        values.assign(w_, l.value, [&] { return k_.stashRead(read->second, "t - sf_lo"); });
        continue;
      }
      values.assign(w_, l.value, [&] { return indexed(batchOf(l) + "[sf_j]", k_.exprs.registerIndex(values.dimsOf(l.value))); });
      if (auto write = loop_.stashWrites.find(key); write != loop_.stashWrites.end())
        w_.line(k_.stashWrite(write->second, "t - sf_lo", values.element(l.value)));
    }
    // Every step's, the chunk's last included.
    printOwnOps(loop_.gateOps);
    printOwnOps(loop_.foldedSummary);
    if (loop_.mode == Mode::Recompute) {
      for (const scan::SavedState *s : k_.recomputed) {
        std::string var = stateVar("fs", k_.fwd->stateIndex(s->state.name));
        vp_.forEachRegister(w_, s->state.mask, [&](CodeWriter &in) {
          in.line(k_.slotElement(s->state, "t - sf_lo") + " = " + k_.stateElement(var, s->state) + ";");
        });
      }
      w_.line("// The state after the chunk's last step is not needed.");
      w_.open("if (sf_i + 1 < sf_len)");
    }
    printBody();
    if (loop_.mode == Mode::Recompute) w_.close();
    w_.close().close();
  }

  // Ops of the backward (the kernel's own recurrence) that a recompute walk evaluates
  // (StepLoop::gateOps, foldedSummary), from what the walk loaded and its forward states.
  void printOwnOps(const OpList &ops) {
    const ValuePrinter &own = k_.values;
    for (Operation *op : ops) {
      if (k_.invariant.count(op)) continue;  // printed before the loop
      if (auto in = llvm::dyn_cast<scan::InputOp>(op)) {
        auto load = llvm::find_if(steps_, [&](const StepLoad &l) { return l.input && l.input->name == in.getName(); });
        if (load->value != in.getResult()) own.assign(w_, in.getResult(), [&] { return load->values->element(load->value); });
        continue;
      }
      if (auto saved = llvm::dyn_cast<scan::SavedOp>(op)) {
        // The forward state before step t: the recomputed state, not yet updated; else loaded.
        if (!k_.isRecomputed(saved.getName())) continue;
        int s = k_.fwd->stateIndex(saved.getName());
        own.assign(w_, saved.getResult(), [&] { return k_.stateElement(stateVar("fs", s), k_.fwd->states[s]); });
        continue;
      }
      if (auto up = llvm::dyn_cast<scan::UpdateOp>(op)) {
        int s = k_.info.stateIndex(up.getName());
        const scan::Port &state = k_.info.states[s];
        own.forEachRegister(w_, state.mask, [&](CodeWriter &in) {
          std::string decay = k_.stateElement(stateVar("sa", s), state);
          in.line(k_.stateElement(stateVar("s", s), state) + " += " + decay + " * " + own.element(up.getB()) + ";");
          in.line(decay + " *= " + own.element(up.getA()) + ";");
        });
        continue;
      }
      own.printMath(w_, op);
      if (auto write = loop_.stashWrites.find(stashValueKey(own, op->getResult(0))); write != loop_.stashWrites.end())
        w_.line(k_.stashWrite(write->second, "t - sf_lo", own.element(op->getResult(0))));
    }
  }

  std::string batchOf(const StepLoad &l) const { return "pf_" + l.values->var(l.value); }
  std::string rowOf(const StepLoad &l) const { return "sf_row_" + l.values->var(l.value); }
  // A whole batch's element of `p` at step sf_j and the register loops' indices, from the row
  // pointer at the batch's first step (64-bit: a row may hold more than 2^27 elements).
  std::string fromRow(const scan::Port &p) const {
    return linear(loop_.descending ? "-(long long)sf_j" : "(long long)sf_j", k_.exprs.extent(p.layout), k_.rowRegisterOffset(p));
  }
  std::string stepTime(const std::string &i) const {
    return loop_.descending ? "sf_hi - 1 - (" + i + ")" : "sf_lo + " + i;
  }

  // Loads step `t` into the batch's slot sf_j; in a whole batch, from the input's row pointer.
  void printLoad(const StepLoad &load, const std::string &t, bool whole) {
    std::string slot = batchOf(load) + "[sf_j]";
    if (load.input) {
      const scan::Port &p = *load.input;
      std::string address = whole ? rowOf(load) + ", " + fromRow(p) : k_.cName(p.name) + ", " + k_.rowOffset(p, t);
      vp_.forEachRegister(w_, p.mask, [&](CodeWriter &in) {
        in.line(indexed(slot, k_.exprs.registerIndex(p.mask)) + " = sf_ld(" + address + ");");
      });
      return;
    }
    // The forward state before forward step t is the forward output of the previous forward step.
    const scan::SavedState &s = *load.saved;
    std::string init = k_.cName(initialOf(s.state.name));
    w_.open("");
    w_.line("const int sf_tp = " + t + (k_.fwd->descending ? " + 1;" : " - 1;"));
    vp_.forEachRegister(w_, s.state.mask, [&](CodeWriter &in) {
      in.line(indexed(slot, k_.exprs.registerIndex(s.state.mask)) + " = (sf_tp >= 0 && sf_tp < T) ? sf_ld(" +
              k_.cName(s.output->name) + ", " + k_.rowOffset(*s.output, "sf_tp") + ") : (" + init + " ? sf_ld(" + init +
              ", " + k_.stateOffset(s.state) + ") : 0.0f);");
    });
    w_.close();
  }

  void printBody() {
    for (Operation *op : loop_.ops) {
      if (loop_.invariant->count(op) || llvm::isa<scan::InputOp>(op)) continue;
      if (auto prev = llvm::dyn_cast<scan::PrevOp>(op)) {
        int s = loop_.info->stateIndex(prev.getName());
        std::string var = stateVar(loop_.statePrefix, s);
        vp_.assign(w_, prev.getResult(), [&] { return k_.stateElement(var, loop_.info->states[s]); });
      } else if (auto saved = llvm::dyn_cast<scan::SavedOp>(op)) {
        if (!k_.isRecomputed(saved.getName())) continue;  // read with the batch
        const scan::SavedState &s = **llvm::find_if(k_.recomputed, [&](const scan::SavedState *d) { return d->state.name == saved.getName(); });
        vp_.assign(w_, saved.getResult(), [&] { return k_.slotElement(s.state, "t - sf_lo"); });
      } else if (auto up = llvm::dyn_cast<scan::UpdateOp>(op)) {
        printUpdate(up);
      } else if (auto out = llvm::dyn_cast<scan::OutputOp>(op)) {
        if (loop_.mode == Mode::Full) printOutput(out);
      } else if (auto acc = llvm::dyn_cast<scan::AccumOp>(op)) {
        if (loop_.mode == Mode::Full) printAccumulate(acc);
      } else if (auto read = loop_.stashReads.find(stashValueKey(vp_, op->getResult(0))); read != loop_.stashReads.end()) {
        vp_.assign(w_, op->getResult(0), [&] { return k_.stashRead(read->second, "t - sf_lo"); });  // computed by an earlier walk
      } else {
        vp_.printMath(w_, op);
        if (auto write = loop_.stashWrites.find(stashValueKey(vp_, op->getResult(0))); write != loop_.stashWrites.end())
          w_.line(k_.stashWrite(write->second, "t - sf_lo", vp_.element(op->getResult(0))));
      }
    }
  }

  void printUpdate(scan::UpdateOp up) {
    int s = loop_.info->stateIndex(up.getName());
    const scan::Port &state = loop_.info->states[s];
    std::string var = stateVar(loop_.statePrefix, s);
    vp_.forEachRegister(w_, state.mask, [&](CodeWriter &in) {
      std::string a = vp_.element(up.getA()), st = k_.stateElement(var, state);
      if (loop_.mode == Mode::Summary) in.line(k_.stateElement(stateVar("sa", s), state) + " *= " + a + ";");
      in.line(st + " = " + a + " * " + st + " + " + vp_.element(up.getB()) + ";");
    });
    if (llvm::any_of(up->getUsers(), [&](Operation *user) { return printed_.count(user) > 0; }))
      vp_.assign(w_, up.getResult(), [&] { return k_.stateElement(var, state); });
  }

  // A per-thread term of a sum over threads: the warp's sum stored in its row of partial sums where
  // every lane adds to the same elements (KernelContext::warpSummed), else added atomically; a
  // complete value is stored by one thread.
  void printOutput(scan::OutputOp out) {
    const scan::Port &p = k_.port(k_.info.outputs, out.getName());
    Value v = out.getValue();
    DimMask partial = k_.layout.partialOver(v);
    // The element's address as a base and an index: the buffer and the row offset at t, or in a
    // whole batch the output's row pointer and the step's and register's distance from it.
    std::string buf = k_.cName(k_.outputBuffer(p)), base = buf, index = k_.rowOffset(p, "t");
    if (carriedRows_.count(buf)) {
      base = outputRow(buf);
      index = fromRow(p);
    }
    std::string guard = k_.guardFor(p.mask, partial, collectives_), address = base + " + " + index;
    if (k_.warpSummed(p.name)) {
      // The warp's row (sf_warp) at t, or with SF_ATOMIC_SUMS the element the warps add to, from
      // the lane's element of register 0; the distance between registers (the register offset at
      // r = 1). The row's offset is computed apart from (b, t)'s, which the loads of [B, T] inputs
      // share: folded into one product, it took the selective SSM's chunked backward from 96 to
      // 102 registers (5 -> 4 blocks per SM).
      std::string offset = k_.rowThreadOffset(p, "t");
      std::string row = buf + " + " + offset + " + (long long)sf_warp * B * T * " + k_.exprs.extent(p.layout);
      std::string atomic = k_.cName(k_.atomicBuffer(p)) + " + " + offset;
      auto sum = [&](CodeWriter &in, const std::string &lanes, const std::string &registerStep, const std::string &terms) {
        in.line("#if " + std::string(kAtomicSumsDefine));
        in.line("sf_warp_sum_lanes<" + lanes + ", true>(" + atomic + registerStep + ", " + terms + ", true);");
        in.line("#else");
        in.line("sf_warp_sum_lanes<" + lanes + ", false>(" + row + registerStep + ", " + terms + ", sf_warp_live);");
        in.line("#endif");
      };
      if (k_.exprs.laneMask() && (p.mask & k_.exprs.registerDims()) == k_.exprs.laneMask()) {
        // Lanes hold different elements of one register dimension: the warp sums all its
        // registers in one transpose-reduce.
        std::string r = k_.exprs.regIndexExpr(k_.exprs.laneDim());
        w_.open("");
        w_.line("float sf_terms[" + k_.exprs.regSizeExpr(k_.exprs.laneDim()) + "];");
        vp_.forEachRegister(w_, p.mask, [&](CodeWriter &in) { in.line("sf_terms[" + r + "] = " + guarded(guard, vp_.element(v)) + ";"); });
        w_.line("const int " + r + " = 1;");
        sum(w_, k_.exprs.regSizeExpr(k_.exprs.laneDim()) + ", SF_LANES", ", " + k_.rowRegisterOffset(p), "sf_terms");
        w_.close();
        return;
      }
      // The same reduction a register at a time: across the channels' lanes where lanes hold
      // different elements (beside other register dimensions), else across the whole warp.
      vp_.forEachRegister(w_, p.mask, [&](CodeWriter &in) {
        sum(in, "1, " + std::string(p.mask & k_.exprs.laneMask() ? "SF_LANES" : "1"), " + " + k_.rowRegisterOffset(p) + ", 0",
            "{" + guarded(guard, vp_.element(v)) + "}");
      });
      return;
    }
    vp_.forEachRegister(w_, p.mask, [&](CodeWriter &in) {
      std::string value = vp_.element(v);
      if (!partial)
        in.line(ifGuard(guard) + "sf_st(" + base + ", " + index + ", " + value + ");");
      else
        in.line(ifGuard(guard) + "atomicAdd(" + address + ", " + value + ");");
    });
  }

  static std::string outputRow(const std::string &buffer) { return "sf_row_" + buffer; }
  // Stored outputs only, and not in a kernel that recomputes register arrays of state: there the
  // registers decide the blocks per SM, and carried pointers took more of them than they saved
  // instructions (the selective SSM's chunked backward: 96 -> 121 registers with every output's
  // pointer carried, 106 with the stored ones, 10 -> 8 or 9 blocks per SM, predicted 2.87 -> 3.42
  // or 3.08 ms). Terms added atomically (partial over channels) keep their addresses per step.
  bool rowCarried(scan::OutputOp out) const { return !recomputesArrays_ && !k_.layout.partialOver(out.getValue()); }

  void printAccumulate(scan::AccumOp acc) {
    std::string sum = accumVar(k_.accumIndex(acc.getName()));
    Value v = acc.getValue();
    vp_.forEachRegister(w_, vp_.dimsOf(v), [&](CodeWriter &in) {
      in.line(indexed(sum, k_.exprs.registerIndex(vp_.dimsOf(v))) + " += " + vp_.element(v) + ";");
    });
  }

  CodeWriter &w_;
  const KernelContext &k_;
  const StepLoop &loop_;
  const ValuePrinter &vp_;
  bool collectives_;
  OpSet printed_;
  const std::vector<StepLoad> steps_ = stepLoads(k_, loop_);  // every value the steps load
  const bool recomputesArrays_ = llvm::any_of(k_.recomputed, [&](const scan::SavedState *s) {
    return (s->state.mask & k_.exprs.registerDims()) != 0;
  });
  // Output buffers written through carried row pointers while the loop of whole batches prints.
  std::map<std::string, const scan::Port *> carriedRows_;
};

}  // namespace

std::vector<ScalarLoad> scalarStepLoads(const KernelContext &k, const StepLoop &loop) {
  std::vector<ScalarLoad> loads;
  for (const StepLoad &l : stepLoads(k, loop))
    if (k.exprs.registerCount(loop.values->dimsOf(l.value)) == "1") loads.push_back({stashKey(l), l.input && l.input->bf16});
  return loads;
}

void printStepLoop(CodeWriter &w, const KernelContext &k, const StepLoop &loop, bool collectives) {
  StepPrinter(w, k, loop, collectives).print();
}

}  // namespace scanforge::cuda
