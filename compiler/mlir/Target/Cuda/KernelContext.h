// What every kernel of one recurrence shares: its ports, the thread layout, the value printers,
// the ops each kind of step loop runs, the buffers and their C names, the layout of recomputed
// forward states in shared memory, and the C expressions for offsets and write guards.
#pragma once

#include <map>
#include <optional>
#include <set>

#include "compiler/mlir/Dialect/Scan/Analysis/Dims.h"
#include "compiler/mlir/Dialect/Scan/Analysis/Invariants.h"
#include "compiler/mlir/Dialect/Scan/Analysis/ParallelDims.h"
#include "compiler/mlir/Target/Cuda/RecurrenceInfo.h"
#include "compiler/mlir/Target/Cuda/ValuePrinter.h"
#include "runtime/cuda/PackageFormat.h"
#include "llvm/ADT/DenseSet.h"

namespace scanforge::cuda {

using OpList = std::vector<mlir::Operation *>;
using OpSet = llvm::DenseSet<mlir::Operation *>;

// The kernel a context prints. A backward needs the forward state before each step: a state with
// no forward output equal to it (or one of register arrays) is recomputed per chunk from the
// forward's checkpoints into shared memory, one slice per thread, by both kernels. A state of one
// float per thread that a forward output holds is recomputed by the sequential kernel too, from
// the chunk's inputs it reads anyway (stashed beside it, so read once): 4 bytes of shared memory per
// step and thread instead of 4 bytes of memory traffic (minGRU's backward: 6 floats per element
// instead of 5). The chunked kernel reads it back from the output: its shared memory per step
// bounds its chunks and resident tiles, and its tiles want long chunks (docs/cuda.md).
enum class KernelKind { Sequential, Chunked };

// A slot of a kernel's stash (KernelContext::stashRead): a float, or the bits of a bf16 input's
// element as it was loaded, in half the shared memory (its widening to float is exact both ways).
struct StashSlot {
  int index = 0;  // among the slots of its kind
  bool bf16 = false;
};
// The slots of a kernel's stash per thread and step, of each kind.
struct StashSize {
  int floats = 0, halves = 0;
  int slots() const { return floats + halves; }
  int bytes() const { return 4 * floats + 2 * halves; }
  bool empty() const { return floats == 0 && halves == 0; }
};

struct KernelContext {
  KernelContext(KernelKind kind, const RecurrenceInfo &info, const RecurrenceInfo *forward, const scan::ParallelDims &layout,
                const scan::DimAnalysis &dims, const scan::DimAnalysis *forwardDims, mlir::AnalysisManager analyses);

  KernelKind kind;
  const RecurrenceInfo &info;
  const RecurrenceInfo *fwd;  // a backward's forward recurrence
  const scan::ParallelDims &layout;
  DimExprs exprs;
  ValuePrinter values;                   // this recurrence's values ("v3")
  std::optional<ValuePrinter> fwdValues; // a backward's recomputed forward values ("f3")
  OpSet invariant, fwdInvariant;         // computed once per thread, before the time loop (scan::Invariants)
  OpList fullOps;                        // the whole step
  OpList summaryOps;                     // what the state updates need (chunk summaries)
  OpList recomputeOps;                   // a backward: the forward updates of recomputed states
  std::vector<const scan::SavedState *> recomputed;
  int block = 0;                         // threads per block
  std::string stem;                      // kernel-name stem
  std::string channels;                  // channels per batch element, as a formula
  std::string threads;                   // threads per batch element: channels, times $LANES with a lane dimension
  // An output is summed over channels by warps (warpSummed): each warp has a row of partial sums.
  bool warpSums = false;
  // Full steps exchange values across a warp (partial outputs reduced, sums over the lane
  // dimension), so every lane stays to the end.
  bool warpCollectives = false;

  std::string channelBlocks() const;      // blocks per batch element, as a formula
  std::string warpRows() const;           // warps per batch element, as a formula

  // ---- buffers ----
  std::vector<BufferDesc> buffers;       // in declaration order
  std::vector<std::string> zeroInit;
  const BufferDesc &buffer(const std::string &name) const;
  const std::string &cName(const std::string &buffer) const;

  // ---- forward states recomputed into shared memory ----
  bool isRecomputed(llvm::StringRef state) const;
  // One float per thread and step (no register dimension): what the sequential kernel recomputes
  // and stashes beside even where a forward output holds it.
  bool oneFloatPerThread(const scan::Port &state) const { return !(state.mask & exprs.registerDims()); }
  bool needsRecompute(const OpList &ops) const;
  std::string recomputeFloats() const;        // per thread and step, a C expression
  std::string recomputeBytesPerStep() const;  // per block and step, a formula ("0" if none)
  // Floats of state a thread holds across steps (its states, and a backward's recomputed forward
  // states), a formula: what decides whether the kernels fit in registers.
  std::string stateRegisters() const;
  // The shared-memory slot of one element of `state` at chunk step `slot`.
  std::string slotElement(const scan::Port &state, const std::string &slot) const;
  // A chunked tile's stash: step values that more than one of its walks reads (the recomputation,
  // the scan from zero, the rescan), kept in shared memory after the recomputed states by the walk
  // that loads them first (KernelPrinter's printChunkKernel), so a tile reads its chunk's inputs
  // from memory once. The thread's `slot` at chunk step `step`, read as a float, and the statement
  // storing `value` there.
  std::string stashRead(const StashSlot &slot, const std::string &step) const;
  std::string stashWrite(const StashSlot &slot, const std::string &step, const std::string &value) const;

  // ---- ports, offsets and guards ----
  const scan::Port &port(const std::vector<scan::Port> &list, llvm::StringRef name) const;
  const scan::Port &param(scan::ParamOp p) const;  // of this recurrence or of its forward
  bool partialOutput(const std::string &name) const;
  // A partial output without channel dimensions: every lane of a warp adds to the same elements,
  // so each warp sums its threads' terms and stores them in its row of warpPartialsOf(name), or
  // with SF_ATOMIC_SUMS adds them atomically (to atomicBuffer).
  bool warpSummed(const std::string &name) const;
  // The buffer the step kernels write an output to: its warps' partial sums, the buffer a partial
  // output is added into atomically, or the output itself.
  std::string outputBuffer(const scan::Port &output) const;
  // Where a partial output's terms are added atomically: the output, or for bf16 an f32 workspace
  // (converted afterwards). Zeroed before the launches.
  std::string atomicBuffer(const scan::Port &output) const;
  size_t accumIndex(llvm::StringRef name) const;
  std::vector<scan::AccumOp> accumOps() const;
  std::string rowOffset(const scan::Port &p, const std::string &t) const;  // [B, T, dims] at (b, t)
  // rowOffset in two parts (DimExprs::threadOffset): the thread's element of row (b, t), and a
  // register's distance from it, a constant in unrolled register loops.
  std::string rowThreadOffset(const scan::Port &p, const std::string &t) const;
  std::string rowRegisterOffset(const scan::Port &p) const;
  std::string stateOffset(const scan::Port &s) const;                      // [B, dims] at b
  // [B, NC, regs, channels] at (b, chunk)
  std::string chunkOffset(const scan::Port &s, const std::string &chunk = "sf_c") const;
  // The distance between a thread's element of one chunk and of the next in that layout.
  std::string chunkStride(const scan::Port &s) const;
  // The condition for this thread to write an element of a port with dims `port` (see .cpp).
  std::string guardFor(DimMask port, DimMask partial, bool collectives) const;
  // "sf_lane == 0" for a port without the lane dimension (every lane holds the same value), else "".
  std::string laneGuard(DimMask port) const;
  std::string stateElement(const std::string &var, const scan::Port &s) const;
  // A thread's element of a parameter gradient's partial sums at row `slot` (a C expression):
  // [slots, channels, register elements of the port].
  std::string partialSumOffset(const scan::Port &accum, const std::string &slot) const;

 private:
  void declareBuffers();
  void addBuffer(const std::string &name, BufferRole role, const char *dtype, std::vector<std::string> shape,
                 bool optional = false);
  std::vector<std::string> dimShape(const scan::Port &p, std::vector<std::string> lead) const;
  std::vector<std::string> chunkShape(const scan::Port &state) const;
  std::string chainLength() const;

  std::map<std::string, size_t> bufferIndex_;
  std::map<std::string, std::string> cNames_;
  std::set<std::string> takenNames_;
  std::map<std::string, std::string> slotOffset_;
};

int laneDimOf(const scan::ParallelDims &layout);  // the dimension dealt to lanes, -1 for none

// Small pieces of generated C.
std::string conjunction(const std::vector<std::string> &conditions);  // "a && b"
std::string ifGuard(const std::string &guard);                        // "if (g) " or ""
std::string guarded(const std::string &guard, const std::string &value);  // "g ? v : 0.0f"
std::string linear(const std::string &base, const std::string &extent, const std::string &offset);
std::string indexed(const std::string &var, const std::string &index);  // "v[i]" or "v"
std::string stateVar(const std::string &prefix, int k);                 // "s0"
std::string accumVar(size_t k);                                         // "acc0"

// The ops of `rec` that `roots` need, roots included, in body order.
OpList slice(scan::RecurrenceOp rec, llvm::ArrayRef<mlir::Operation *> roots);

}  // namespace scanforge::cuda
