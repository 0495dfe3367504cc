// The ports of a compiled recurrence as the CUDA kernels see them: tensors with dimensions, a
// memory layout and an element type, and the buffer names the kernel package uses for them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/mlir/Dialect/Scan/IR/ScanDims.h"

namespace scanforge::cuda {

using scan::DimMask;

struct PortDesc {
  std::string name;                // the port's name in the IR
  DimMask mask = 0;                // its dimensions
  llvm::SmallVector<int> layout;   // the same dimensions in memory order
  bool bf16 = false;               // stored as bfloat16 (computed in f32)
};

// How the backward obtains a forward state before each forward step (scan.saved).
struct SavedDesc {
  PortDesc state;                  // the forward state
  std::optional<PortDesc> output;  // an f32 forward output equal to the state after every step
  bool used = false;               // the backward reads it
};

struct RecurrenceInfo {
  scan::RecurrenceOp op;
  bool descending = false;         // steps run from t = T-1 down to 0
  std::vector<PortDesc> inputs, params, outputs, accums, states;
  std::vector<SavedDesc> saved;    // backward only, one per forward state

  // Collects the ports of `rec`; `forward` is its forward recurrence when `rec` is a backward.
  // Fails with a located error on names the kernels cannot use (dimensions that are not
  // identifiers) and on a backward that does not match its forward.
  static mlir::FailureOr<RecurrenceInfo> collect(scan::RecurrenceOp rec, scan::RecurrenceOp forward);

  int stateIndex(llvm::StringRef name) const;
  // The forward states the backward recomputes from checkpoints (read and not kept in an output).
  std::vector<const SavedDesc *> recomputed() const;
};

// Buffer names in a kernel package, derived from port and state names ('.' never occurs in a
// name the DSL accepts, so these cannot clash with user names).
inline std::string initialOf(const std::string &state) { return state + ".initial"; }
inline std::string finalOf(const std::string &state) { return state + ".final"; }
inline std::string checkpointsOf(const std::string &state) { return state + ".checkpoints"; }
inline std::string chunkDecayOf(const std::string &state) { return state + ".chunk_a"; }
inline std::string chunkLocalOf(const std::string &state) { return state + ".chunk_b"; }
inline std::string f32SumOf(const std::string &output) { return output + ".f32"; }

}  // namespace scanforge::cuda
