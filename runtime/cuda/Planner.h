// Picks the strategy and chunk length for a recurrence at given shapes, from a cost model of the
// two strategies on the device (docs/cuda.md, "Planner"); the device's limits and speeds are
// runtime/cuda/DeviceSpec.h's H100, with the SM count of the device planned for.
//
//   sequential  B * channels threads walk all of T. Memory latency is hidden only by the loads in
//               flight: each thread loads kLoadBatchSteps steps at once (kChunkLoadBatchSteps in
//               a chunked tile), so the bandwidth reached is min(copy bandwidth, resident threads
//               * a batch's bytes / memory latency); a step costs its share of that latency plus
//               its own dependent instructions.
//   chunked     B * channels * NC tiles: more loads in flight; a chunk's inputs are read once when
//               the tile stashes them in shared memory (which bounds L and the resident blocks),
//               else twice (from L2 when the resident tiles' chunks fit in half of it); the carry passes
//               from group to group of chunks: a critical path of NC / chainGroup hops, a
//               group's aggregates read and two chunk walks. Each chunk also writes a row of
//               parameter-gradient partial sums (read back once), and each tile costs the SMs a
//               fixed DeviceSpec::tileOverhead, which both favour longer chunks.
// Both strategies write checkpoints every L steps, which a backward that recomputes states reads.
// Resident threads: half an SM's, fewer where a block's recomputed states and stash (L steps of
// them in shared memory) leave room for fewer blocks; the threads beyond them walk their steps in later
// waves. Predicted time = max(bytes / bandwidth reached, critical path, waves of walks) + launch
// overhead; chunked, the
// last tiles' walks of their chunk are added to the traffic's time and the tiles' fixed costs to
// the total (measured on an H200: at B=8 T=16384 minGRU is fastest with chunks of 128 steps, 1.94
// ms forward+backward against 2.49 with 16 and 2.13 with 512). The chunk length is the best power
// of two from 16 steps; chunked wins only when 10% faster.
// The chunk length L is also the checkpoint interval. A backward that recomputes forward states
// holds one chunk of them per thread in shared memory, so L <= 48 KiB / (bytes per step of a
// block); the sequential strategy then uses L = min(64, that bound), or with its stash (the chunk's
// inputs beside the recomputed states, read from memory once) the best power of two from 16 to 64
// that leaves room for kMinBlocksPerSM blocks, the stash winning a tie; otherwise L = T. Chunked,
// L <= (sharedPerBlock - 1 KiB of static shared memory) / (recomputed and stashed bytes per step).
// A length taken from a bound is whole batches of loads (16 steps sequential, 8 chunked; not
// rounded with register arrays) where one fits, and the sequential stash is not considered where not 16 steps
// fit: a chunk's remainder runs a slower path (measured on an H200, Planner.cpp's wholeBatches).
// Grid limits: one launch covers at most maxGridYZ (65535) batch elements (RecurrenceRunner launches a
// larger batch in slices) and, chunked, T / L <= maxGridYZ.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/cuda/PackageFormat.h"

namespace scanforge::cuda {

enum class Strategy { Sequential, Chunked };
const char *strategyName(Strategy s);

struct Plan {
  Strategy strategy = Strategy::Sequential;
  int64_t chunk = 1;   // L
  int64_t chunks = 1;  // NC = ceil(T / L)
  int64_t lanes = 1;   // threads per channel ($LANES): a lane dimension's elements dealt to them
  // Chunked: the tiles keep the step values their walks share in shared memory ($STASH, the
  // kernels' SF_STASH), reading a chunk's inputs once at the price of shared memory per step.
  bool stash = false;
  // The forward's lanes where they differ from the backward's: the forward of a pair writes the
  // same checkpoints with any lane count (they are laid out by channel and state element), and
  // without the backward's second state per element it can hold more of them per thread.
  std::optional<int64_t> forwardLanes = std::nullopt;
  // Per-step outputs summed over channels (the selective SSM's B.grad) added atomically by the
  // warps ($ATOMIC): no rows of partial sums to write and read back, but the order of the
  // additions, so the last bits, vary from run to run (RecurrenceRunner::allowAtomicSums).
  bool atomicSums = false;

  // The plan the forward's kernels run: lanes = the forward's.
  Plan forwardPlan() const;
};
// "chunked L=128 lanes=4 stash", "chunked L=16 lanes=4 (forward 1 lane)": how every tool names a
// plan (lanes when more than one).
std::string describe(const Plan &plan);

struct PlanRequest {
  int64_t batch = 1, steps = 1, channels = 1;
  // Shared memory one block of a strategy's kernels asks per chunk step (each launch's shared_bytes
  // at $L = 1; the larger of forward's and backward's), without and with the stash: a backward's
  // recomputed states, and the step values the walks of a chunk share (KernelContext::stashElement),
  // which a kernel with the stash reads from memory once. 0: none.
  struct SharedPerStep {
    int64_t plain = 0, stashed = 0;
    bool stash = false;  // a kernel of the strategy has a stash
  };
  SharedPerStep sequentialShared, chunkedShared;
  // Shared memory a block may use (DeviceBackend::sharedBytesPerBlock, the opt-in maximum): the
  // bound of a kernel with the stash. Without it, kernels keep to kSharedBudget.
  int64_t sharedPerBlock = 48 * 1024;
  // Instructions on one step's dependent chain per thread, over the kernels the plan serves (the
  // manifest's step_instructions): what a step costs beyond its share of the memory latency.
  double stepInstructions = 0;
  // Bytes one thread (a batch element's channel) reads and writes per step, over the kernels the
  // plan serves (forward and backward).
  double readBytesPerStep = 8, writtenBytesPerStep = 4;
  // Bytes of parameter-gradient partial sums one thread writes per row (once per batch element
  // sequential, per batch element and chunk chunked); a second kernel reads them back.
  double partialSumBytes = 0;
  // Bytes of checkpoints one thread moves per chunk (checkpoint interval): the forward writes its
  // states' values before each chunk and a backward that recomputes them reads them back. Short
  // intervals of large states make this a good part of the traffic (the selective SSM's 16 states
  // per thread every 12 steps: 11 bytes per step against 60 of inputs).
  double checkpointBytes = 0;
  int multiprocessors = 1;
  // Threads per block of the sequential and the chunked kernels, and kernels per call (forward,
  // backward): a chunked call runs chunkedBlockThreads-channel tiles of every chunk, each with a
  // fixed cost.
  int64_t sequentialBlockThreads = 128, chunkedBlockThreads = 128, passes = 1;
  int64_t maxGridYZ = 65535;  // the device's grid y/z limit (DeviceBackend::maxGridYZ)
  int chainGroup = kChainGroup;  // chunks per carry group of the chunked kernel (its manifest's chain_group)
  // Steps the kernels' step loops load together, sequential and chunked: a chunk length taken from
  // a shared-memory bound is whole batches of them. 1 (no rounding) for a recurrence with register
  // dimensions (RecurrenceRunner), whose batches depend on the share of the arrays a thread holds
  // (the step loop's sf_batch: a step at a time with whole arrays). The cost model's latency term
  // keeps kLoadBatchSteps and kChunkLoadBatchSteps for every kernel.
  int64_t sequentialBatch = kLoadBatchSteps, chunkedBatch = kChunkLoadBatchSteps;
  // Forced choices (tests, benchmarks); the chunk must still fit the shared-memory bound.
  std::optional<Strategy> strategy;
  std::optional<int64_t> chunk;
  std::optional<bool> stash;  // with or without the stash, where the strategy's kernels have one
};

constexpr int64_t kMinChunk = 16;
constexpr int64_t kSequentialChunk = 64;
constexpr int64_t kSharedBudget = 48 * 1024;
constexpr int64_t kStaticSharedReserve = 1024;  // the chunked kernel's static shared memory (its ticket), bounded
// Floats of state per thread (the manifest's state_registers) beyond which a kernel spills: ptxas
// for sm_90 with 4 blocks of 64 threads per SM (255 registers at most) assembled linear attention's
// backward with 64 floats (k = 128 on 4 lanes, k = 64 on 2) in 241 registers without spilling, and
// spilled 832 bytes with 128 (k = 128 on 2 lanes). The runner deals a lane dimension to enough
// lanes to stay within it.
constexpr int64_t kMaxStateRegisters = 64;

// Throws CudaError, naming the shapes, when no plan fits the limits.
Plan plan(const PlanRequest &request);

// How often the chunked kernel's carry hops from one group of chunks to the next, in sequence.
int64_t chainHops(const Plan &plan, int chainGroup);

// The cost model's time for `plan` (seconds, a prediction), and its terms.
struct PlanCost {
  double bytes = 0, bandwidth = 0, criticalPath = 0, walks = 0, tiles = 0, seconds = 0;
};
PlanCost predictPlan(const PlanRequest &request, const Plan &plan);

}  // namespace scanforge::cuda
