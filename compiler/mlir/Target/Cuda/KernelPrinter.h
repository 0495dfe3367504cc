// Prints the CUDA kernels of one recurrence (a forward, or a backward with its forward).
//
// Every kernel runs one thread per (batch element, channel index). Two strategies:
//   sequential  <name>_seq, grid (channel blocks, B, 1): each thread walks all of t, its state in
//               registers, its inputs loaded a batch of steps at a time.
//   chunked     <name>_chunk, grid (channel blocks, B, chunks), one launch: each tile scans its
//               chunk from a zero state (decay product and end state), takes the carry the tile
//               of the chunk before published (a chained carry on ticket-ordered tiles), publishes
//               its own end state, then rescans the chunk from the carry writing outputs and
//               gradients.
// A backward kernel needs the forward state before each step: recomputed per chunk from the
// forward's checkpoints into a per-thread slice of shared memory, then walked in reverse, or read
// back from an f32 forward output equal to it (the chunked kernel; KernelKind says which).
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
