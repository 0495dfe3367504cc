// The kernel-package format, defined once for its writer (the compiler's `scanc --emit-package`,
// CompiledModule::writeKernelPackage) and its reader (KernelPackage, the runtime on a GPU machine
// without MLIR): what a recurrence's kernels need to be launched — buffers, launch sequences of the
// two strategies, grids and shared memory as formulas — and its JSON manifest (docs/cuda.md).
#pragma once

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace scanforge::cuda {

// What a buffer holds; the manifest spells each role as roleName() gives it.
enum class BufferRole {
  Input,                // a per-step input [B, T, dims] (a backward's include output gradients)
  Param,                // a parameter [dims]
  Output,               // a per-step output (a backward's are input gradients)
  Accum,                // a parameter gradient, summed over B and T
  InitialState,         // [B, dims], optional: null starts from zero
  FinalState,           // [B, dims], optional: null skips the write
  Checkpoint,           // [B, NC, register elements, channels]: a forward writes it, its backward reads it
  ForwardOutput,        // a backward reading a forward output equal to a forward state
  ForwardInitialState,  // ... and that state's initial value
  Workspace,            // scratch the runtime allocates
};
const char *roleName(BufferRole role);  // "input", "forward_initial_state", ...

struct BufferDesc {
  std::string name;
  BufferRole role = BufferRole::Input;
  std::string dtype;   // f32 or bf16
  std::vector<std::string> shape;  // formulas
  bool optional = false;
  bool forBackward = false;        // a forward checkpoint the backward reads
};

struct ParamDesc {
  enum class Kind { Buffer, Int32, Int64 } kind;
  std::string value;  // a buffer name, or a formula
};

struct LaunchDesc {
  std::string kernel;
  std::vector<ParamDesc> params;
  std::array<std::string, 3> grid;
  int block = 0;
  std::string sharedBytes = "0";
};

// Chunks per group of the chunked kernel's carry: the carry hops from group to group, and within a
// group each tile composes the aggregates of the chunks before it (docs/cuda.md): (G - 1) / 2 of
// them on average, two floats per state element each. With register dimensions a state is N floats
// per thread and chunks are short (the recompute's shared memory bounds them): the selective SSM's
// 12-step tiles read 15.5 aggregates of 128 bytes per thread at G = 32, against 144 bytes of
// inputs; at 4, 1.5, for 8x the hops. One float per state: 16, where 32 cost minGRU's tiles of 16
// steps a second batch of aggregate loads on average (2.31 -> 2.10 ms forward+backward at B=8
// T=16384, predicted) for hops that bind nothing. The emitter picks G per recurrence and the
// manifest carries it (`chain_group`, RecurrenceDesc::chainGroup); a manifest without it was
// written for 32 (kManifestChainGroup).
constexpr int kChainGroup = 16;
constexpr int kManifestChainGroup = 32;
// The macro and the formula variable of the lane count (RecurrenceDesc::laneDim).
constexpr const char *kLanesDefine = "SF_LANES";
constexpr const char *kLanesVariable = "$LANES";
// The macro and the formula variable of the kernels' stash: 1 with it, 0 without (Plan::stash).
constexpr const char *kStashDefine = "SF_STASH";
constexpr const char *kStashVariable = "$STASH";
// The macro and the formula variable of per-step sums over channels (KernelContext::warpSummed):
// 0 each warp stores its sums in its own row and a second kernel adds the rows in a fixed order,
// 1 the warps add their sums atomically into the output (Plan::atomicSums).
constexpr const char *kAtomicSumsDefine = "SF_ATOMIC_SUMS";
constexpr const char *kAtomicSumsVariable = "$ATOMIC";
constexpr int kRegisterDimsChainGroup = 4;

struct RecurrenceDesc {
  std::string name;            // the recurrence's symbol
  std::string adjointOf;       // a backward: its forward recurrence
  std::string backward;        // a forward: its backward recurrence, if any
  bool reverse = false;        // runs from t = T-1 down to 0
  std::vector<std::string> channelDims, registerDims;
  // A register dimension dealt to lanes: $LANES threads per channel (the planner's Plan::lanes,
  // compiled as SF_LANES), each holding its size / $LANES elements. Empty: none ($LANES is 1).
  std::string laneDim;
  std::string layoutNote;      // why the layout has no channel dimensions, if so
  std::string file;            // the .cu file in the package
  std::string source;
  std::map<std::string, std::string> defines;  // macro -> formula (register dimension sizes)
  std::vector<BufferDesc> buffers;
  std::vector<std::string> zeroInit;           // buffers the runtime zeroes before the launches
  std::vector<LaunchDesc> sequential, chunked; // the two strategies, in launch order
  std::string channels;                        // channels per batch element (formula); threads: times $LANES
  std::string stateRegisters = "0";            // floats of state per thread across steps (formula)
  std::string stepInstructions = "0";          // a step's dependent instructions per thread (estimate)
  int chainGroup = kManifestChainGroup;        // chunks per group of the chunked kernel's carry

  const BufferDesc *buffer(const std::string &name) const;
};

// Whether a buffer is part of a call's ideal traffic (each moved once): inputs (a backward's
// output gradients included), parameters, outputs and a backward's parameter gradients; not a
// backward's reads of what the forward wrote (its outputs, initial states, checkpoints).
bool countsAsIdeal(const BufferDesc &buffer, bool backward);

// Buffer names derived from port and state names ('.' never occurs in a name the DSL accepts, so
// these cannot clash with user names). Golden vectors key their tensors by the same names.
inline std::string initialOf(const std::string &state) { return state + ".initial"; }
inline std::string finalOf(const std::string &state) { return state + ".final"; }
inline std::string checkpointsOf(const std::string &state) { return state + ".checkpoints"; }
// What the chunked kernel's tiles publish per chunk: its decay product and end state from zero
// (the aggregate), and at the end of each group of chunks (RecurrenceDesc::chainGroup) the state after it.
inline std::string chunkDecayOf(const std::string &state) { return state + ".chunk_a"; }
inline std::string chunkLocalOf(const std::string &state) { return state + ".chunk_b"; }
inline std::string chunkEndOf(const std::string &state) { return state + ".chunk_end"; }
// The chunked kernel's tickets and per-tile flags (i32, zeroed before each launch).
inline std::string chainBuffer() { return "sf.chain"; }
// Steps of scalar inputs a kernel's step loop loads together before computing them (a thread
// that loads whole register arrays loads one step at a time): one memory latency per batch. The
// chunked kernel walks chunks of 16 steps or more twice with more registers live; on an H200
// batches of 8 ran its minGRU forward+backward at B=8 T=16384 in 2.48 ms against 2.99 with 16,
// while the sequential kernel ran 2.79 ms with 16 against 2.95 with 8 (docs/benchmarks.md).
constexpr int kLoadBatchSteps = 16;       // sequential kernels
constexpr int kChunkLoadBatchSteps = 8;   // chunked kernels
// The step kernels are compiled for at least this many resident blocks per SM (__launch_bounds__):
// up to 65536 / (2 * block) registers per thread (128 in blocks of 256); with the block size alone,
// ptxas caps registers lower and spills in the larger backward steps. A plan whose shared memory
// leaves room for fewer blocks wastes the registers kept for them (minimal gated RNN at B=64
// T=4096: chunks of 64 with the stash, 1 block per SM, 85.4 % of copy; of 32, 2 blocks, 97.8 %,
// predicted).
constexpr int kMinBlocksPerSM = 2;
inline std::string f32SumOf(const std::string &output) { return output + ".f32"; }
// A per-step output summed over channels: each warp's sum of its threads' terms, one row per warp
// of a batch element's threads ([cdiv(threads, 32), B, T, dims]); a second kernel adds the rows in
// a fixed order, so the output's bits do not depend on the order warps run in.
inline std::string warpPartialsOf(const std::string &output) { return output + ".by_warp"; }
// A parameter gradient's partial sums, one row per thread of each batch element (sequential kernel)
// or of each (batch element, chunk) (chunked kernel); a second kernel adds them in a fixed order,
// so the gradient's bits do not depend on the order blocks run in.
inline std::string sequencePartialsOf(const std::string &accum) { return accum + ".by_sequence"; }
inline std::string chunkPartialsOf(const std::string &accum) { return accum + ".by_chunk"; }

constexpr const char *kManifestFormat = "scanforge-cuda-package";
constexpr int kManifestVersion = 1;

// The manifest of these recurrences (the sources are written beside it, one file each).
nlohmann::json toManifest(const std::vector<RecurrenceDesc> &recurrences);
// The recurrences of a manifest, with their sources by file name. Throws CudaError saying what is
// wrong (nlohmann::json::exception on a malformed entry; KernelPackage names the file).
std::vector<RecurrenceDesc> fromManifest(const nlohmann::json &manifest, const std::map<std::string, std::string> &sources);

}  // namespace scanforge::cuda
