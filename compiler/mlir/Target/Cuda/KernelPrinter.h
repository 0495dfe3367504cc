// Prints the CUDA kernels of one recurrence (a forward, or a backward with its forward).
//
// Every kernel runs one thread per (batch element, channel index); grid = (channel blocks, B, 1 or
// chunks). Two strategies:
//   sequential  <name>_seq: each thread walks all of t, its state in registers, with the next
//               steps' inputs prefetched into a register ring.
//   chunked     <name>_reduce (per chunk: a local scan from a zero state -> the chunk's decay
//               product and local state), <name>_carry (per thread: carries across chunks, which
//               are also the checkpoints), <name>_apply (per chunk: rescans from its carry and
//               writes outputs and gradients).
// A backward kernel needs the forward state before each step. A state the forward also writes as
// an f32 output is read from that output; any other is recomputed per chunk from the forward's
// checkpoints into a per-thread slice of shared memory, then walked in reverse.
#pragma once

#include "runtime/cuda/PackageFormat.h"
#include "compiler/mlir/Target/Cuda/RecurrenceInfo.h"
#include "compiler/mlir/Dialect/Scan/Analysis/ParallelDims.h"

namespace scanforge::cuda {

// Prints the kernels of `rec`; `forward` is its forward recurrence when `rec` is a backward (both
// use `layout`, the forward's ParallelDims). `analyses` manages the module of both. Fails with a
// located error on IR the backend cannot compile.
mlir::FailureOr<RecurrenceDesc> printKernels(scan::RecurrenceOp rec, scan::RecurrenceOp forward,
                                             const scan::ParallelDims &layout, mlir::AnalysisManager analyses);

// The kernel-name stem of a recurrence: "sf_" + its symbol as an identifier.
std::string kernelStem(llvm::StringRef recurrence);

}  // namespace scanforge::cuda
