// The loop over the steps of one chunk, [sf_lo, sf_hi), in a kernel: the inputs of a batch of
// steps are loaded into registers together, then each step of the batch runs the recurrence's ops
// on the thread's registers.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/mlir/Target/Cuda/CodeWriter.h"
#include "compiler/mlir/Target/Cuda/KernelContext.h"

namespace scanforge::cuda {

// What a step loop does with the state updates and the ports.
enum class Mode {
  Full,       // everything: outputs, gradients, state updates
  Summary,    // only the state updates, also multiplying the decays (chunk summaries)
  Recompute,  // forward state updates inside a backward kernel, storing each state first
};

struct StepLoop {
  const ValuePrinter *values;  // of the recurrence whose ops run
  const RecurrenceInfo *info;
  const OpSet *invariant;      // printed before the loop
  OpList ops;
  Mode mode;
  bool descending;
  std::string statePrefix;     // "s" for the kernel's own states, "fs" for recomputed forward states
  int batchSteps;              // steps of scalar inputs loaded together (kLoadBatchSteps, kChunkLoadBatchSteps)
  // A kernel's stash (KernelContext::stashRead): the step values this walk stores into the
  // stash as it loads (scalarStepLoads) or computes them (stashValueKey), and those it reads from
  // there instead, by slot.
  std::map<std::string, StashSlot> stashWrites, stashReads;
  // The ops without the stash where reading computed values from it leaves some out of `ops`
  // (empty: the same ops).
  OpList unstashedOps;
  // A backward's recompute walk with the gate stash (GateCut.h): ops of the backward (the kernel's
  // own recurrence, KernelContext::values) it evaluates at every step from the forward inputs it
  // loads, for the stash.
  OpList gateOps;
  // A chunked backward's recompute walk with the chunk's summary folded in: the backward's
  // summary ops (Mode::Summary), evaluated at every step from what this walk loads (it also loads
  // the backward inputs they need), their state updates aggregated in this walk's order, the
  // reverse of the backward's own (s += sa * b; sa *= a gives what the reverse scan from zero
  // gives). The tile then walks its chunk twice instead of three times.
  OpList foldedSummary;
};

// The stash key of a value a walk computes: the same op of the recurrence in every walk that runs it.
std::string stashValueKey(const ValuePrinter &values, mlir::Value v);

// The values a step loop loads from memory at every step that are one float per thread (an
// input's element, or a forward state read from a forward output), by stash key: what a chunked
// tile's walks may share through its stash; `bf16`: loaded from a bf16 input.
struct ScalarLoad {
  std::string key;
  bool bf16 = false;
};
std::vector<ScalarLoad> scalarStepLoads(const KernelContext &k, const StepLoop &loop);

// The ops a step loop must print: its sinks (state updates, and in full mode outputs and
// gradients) and what they use; an unused read of a state or of a forward output is left out.
// `leaves`: ops whose results the loop reads from the stash, so their operands are not needed.
OpList liveOps(const OpList &ops, Mode mode, const OpSet &leaves = {});

// Prints the loop; `collectives`: the kernel keeps every lane running for warp reductions.
void printStepLoop(CodeWriter &w, const KernelContext &k, const StepLoop &loop, bool collectives);

}  // namespace scanforge::cuda
