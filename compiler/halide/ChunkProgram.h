// Lowers scan recurrences to Halide pipelines that process ONE batch element over ONE chunk of
// time steps. The gate math is fused into the scan (it becomes the expression of the state's
// update), time is a serial RDom, channels are vectorised. The host (CpuExecutor) runs a program
// per (batch element, chunk), carrying states between chunks and threads over the batch.
//
// Forward program: inputs + params + initial states -> outputs + final states.
// Backward program: inputs + output gradients + params + forward checkpoints (forward states at
// the chunk's forward start) + adjoint initial states -> input gradients + per-chunk parameter
// gradient partials + adjoint final states. It recomputes the forward states inside the chunk
// from the checkpoint instead of reading stored states.
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

#include "compiler/mlir/Dialect/Scan/Analysis/Dims.h"
#include "compiler/mlir/Dialect/Scan/Analysis/Invariants.h"
#include "compiler/mlir/Dialect/Scan/Analysis/ParallelDims.h"
#include "compiler/mlir/Dialect/Scan/Analysis/Ports.h"
#include "mlir/Pass/AnalysisManager.h"

namespace scanforge::cpu {

// f32 lanes per iteration of a program's vectorised loops: two AVX-512 vectors, four AVX2 ones.
// One vector's chain of exp, log and division is long enough to fill the out-of-order core's FP
// scheduler before the next iteration's independent chain enters it (llvm-mca -mcpu=znver4: 99 %
// of dispatch stalls "scheduler full"); several vectors per iteration interleave their chains.
// Measured on Zen 4 (docs/cpu.md): 32 lanes beat 16 and 64 on AVX-512, 8 and 16 on AVX2.
constexpr int kLanesPerIteration = 32;

// A tensor port in memory: [t?, layout dims...] row-major, for one batch element.
struct PortLayout {
  std::string name;
  std::vector<int> dims;   // indices into the recurrence's dimension table, in layout order
  bool bf16 = false;
  bool perStep = false;    // has a time dimension (inputs, outputs) or not (states, params)
};

struct BoundInput {
  PortLayout layout;
  Halide::ImageParam param;
};

struct ProducedOutput {
  PortLayout layout;
  Halide::Func func;
  // The channel dimensions this output is a per-worker term of a sum over (scan::ParallelDims):
  // a block of those channels produces its partial, and the blocks' partials add up to the output.
  scan::DimMask partialOver = 0;
};

struct ChunkProgram {
  std::vector<std::string> dimNames;
  std::vector<BoundInput> inputs;       // per-step inputs (and output gradients for a backward)
  std::vector<BoundInput> params;
  std::vector<BoundInput> initial;      // initial value of each state of the program
  std::vector<BoundInput> checkpoints;  // backward only: forward state at the chunk's forward start
  std::vector<ProducedOutput> outputs;  // per-step outputs (input gradients for a backward)
  std::vector<ProducedOutput> finals;   // final value of each state of the program
  std::vector<ProducedOutput> accums;   // backward only: parameter gradients summed over the chunk
  scan::DimMask channelDims = 0;        // dimensions the work can be split along (scan::ParallelDims)
  Halide::Pipeline pipeline;
  Halide::Target target;

  // Halide's lowered statement of the whole pipeline (for scanc --dump=halide).
  std::string loweredStatement();
  // The pipeline's machine code for the host, as assembly text (for scanc --dump=cpu-asm).
  std::string assembly();
};

// The dialect's facts a program is built from, computed once per module by its AnalysisManager
// (CompiledModule) and shared by every copy of the program; the builders only read them, so
// copies may be built on several threads.
struct ProgramFacts {
  const scan::DimAnalysis *forwardDims = nullptr, *backwardDims = nullptr;
  const scan::Ports *forwardPorts = nullptr, *backwardPorts = nullptr;
  const scan::Invariants *forwardInvariants = nullptr, *backwardInvariants = nullptr;
  const scan::ParallelDims *parallel = nullptr;
};
// The facts of `forward` and its backward (may be null) from `analyses`, a manager of their module.
// Throws std::logic_error on IR whose dimensions do not verify.
ProgramFacts programFacts(mlir::AnalysisManager analyses, scan::RecurrenceOp forward, scan::RecurrenceOp backward);

ChunkProgram buildForwardProgram(scan::RecurrenceOp forward, const ProgramFacts &facts);
ChunkProgram buildBackwardProgram(scan::RecurrenceOp forward, scan::RecurrenceOp backward, const ProgramFacts &facts);

}  // namespace scanforge::cpu
