#include "runtime/cuda/Planner.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/DeviceSpec.h"
#include "runtime/cuda/PackageFormat.h"

namespace scanforge::cuda {

const char *strategyName(Strategy s) { return s == Strategy::Sequential ? "sequential" : "chunked"; }

Plan Plan::forwardPlan() const {
  Plan p = *this;
  p.lanes = forwardLanes.value_or(lanes);
  p.forwardLanes.reset();
  return p;
}

std::string describe(const Plan &plan) {
  std::string forward;
  if (plan.forwardLanes && *plan.forwardLanes != plan.lanes)
    forward = " (forward " + std::to_string(*plan.forwardLanes) + (*plan.forwardLanes > 1 ? " lanes)" : " lane)");
  return std::string(strategyName(plan.strategy)) + " L=" + std::to_string(plan.chunk) +
         (plan.lanes > 1 ? " lanes=" + std::to_string(plan.lanes) : "") + (plan.stash ? " stash" : "") +
         (plan.atomicSums ? " atomic sums" : "") + forward;
}

namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The longest chunk up to `bound` that is whole batches of `batch` loads, where one batch fits. The
// kernels load a batch of steps at once and run a chunk's remainder through a slower path that
// clamps every address: at 15 steps every step took it, and minGRU's sequential forward ran
// 1.003 ms against 0.860 at 48 (the same kernel, H200, 2026-11-27).
int64_t wholeBatches(int64_t bound, int64_t batch) { return bound >= batch ? bound - bound % batch : bound; }

std::string shapes(const PlanRequest &r) {
  return "B=" + std::to_string(r.batch) + " T=" + std::to_string(r.steps) + " channels=" + std::to_string(r.channels);
}

}  // namespace

int64_t chainHops(const Plan &p, int chainGroup) { return p.strategy == Strategy::Chunked ? cdiv(p.chunks, chainGroup) : 0; }

PlanCost predictPlan(const PlanRequest &r, const Plan &p) {
  const DeviceSpec &d = h100();
  double sms = r.multiprocessors, chunked = p.strategy == Strategy::Chunked;
  double channels = static_cast<double>(r.batch) * static_cast<double>(r.channels);
  double threads = channels * (chunked ? static_cast<double>(p.chunks) : 1.0);
  double steps = static_cast<double>(r.steps), chunk = static_cast<double>(p.chunk);
  // Kernels are compiled for kMinBlocksPerSM blocks per SM or more; assume half the SM's threads resident, fewer
  // where a block's recomputed states (L steps of them in shared memory) leave room for fewer blocks.
  double residentPerSm = d.threadsPerSm / 2.0;
  const PlanRequest::SharedPerStep &shared = chunked ? r.chunkedShared : r.sequentialShared;
  int64_t sharedPerStep = p.stash ? shared.stashed : shared.plain;
  if (sharedPerStep > 0) {
    size_t blockBytes = static_cast<size_t>(sharedPerStep * p.chunk);
    int64_t blockThreads = chunked ? r.chunkedBlockThreads : r.sequentialBlockThreads;
    residentPerSm = std::min(residentPerSm, static_cast<double>(d.blocksBySharedMemory(blockBytes) * blockThreads));
  }
  double resident = std::min(threads, sms * residentPerSm);
  // One step of a latency-bound thread: its share of a batch's load latency, then its own instructions.
  double batch = chunked ? kChunkLoadBatchSteps : kLoadBatchSteps;
  double work = r.stepInstructions * d.aluCycles / d.clockHz, hop = d.memoryLatency / batch + work;
  // A chunked tile walks its chunk twice; with the stash the second walk reads shared memory, so
  // it waits for no load.
  double tileWalks = chunk * hop + chunk * (p.stash ? work : hop);
  PlanCost c;
  c.bytes = channels * steps * (r.readBytesPerStep + r.writtenBytesPerStep);
  c.bytes += channels * (chunked ? static_cast<double>(p.chunks) : 1.0) * 2 * r.partialSumBytes;
  c.bytes += channels * static_cast<double>(p.chunks) * r.checkpointBytes;
  // A chunk walked twice without the stash reads its inputs again: the sequential backward's
  // recomputation, then its steps, from memory once the chunks of the resident threads outgrow
  // half of L2; a chunked tile's scan from zero, then its rescan after the carry's wait, from
  // memory always (an H200 measured minGRU's chunked forward at 8x16384 in chunks of 48 steps
  // at 54 % of copy, where the emulated traffic, which counts the second read, predicted 53 %).
  bool rereads = !p.stash && (chunked || (r.sequentialShared.plain > 0 &&
                                          resident * chunk * r.readBytesPerStep > static_cast<double>(d.l2Bytes) / 2));
  if (rereads) c.bytes += channels * steps * r.readBytesPerStep;
  double inFlight = resident * batch * r.readBytesPerStep;
  c.bandwidth = std::min(d.copyBandwidth * sms / d.multiprocessors, inFlight / d.memoryLatency);
  // Chunked: a tile's scan and rescan, a hop per group of chunks, and a group's aggregates read.
  double hops = static_cast<double>(chainHops(p, r.chainGroup));
  c.criticalPath = chunked ? tileWalks + hops * d.chainHop + d.memoryLatency : steps * hop;
  // The walks themselves: threads beyond those resident wait for a later wave.
  c.walks = std::ceil(threads / resident) * (chunked ? tileWalks : steps * hop);
  // Chunked: each tile is a fixed cost on one SM, and the traffic ends with the last tiles' walks of
  // their chunk (scan and rescan), which overlap no other tile's; the critical path holds a walk
  // already, so the drain extends the traffic's time only.
  double streaming = c.bytes / c.bandwidth;
  if (chunked) {
    c.tiles = static_cast<double>(cdiv(r.channels, r.chunkedBlockThreads) * r.batch * p.chunks * r.passes);
    streaming += tileWalks;
  }
  c.seconds = std::max({streaming, c.criticalPath, c.walks}) + c.tiles * d.tileOverhead / sms + d.launchOverhead;
  return c;
}

Plan plan(const PlanRequest &r) {
  if (r.batch < 1 || r.steps < 1 || r.channels < 1) throw CudaError("cannot plan a scan over empty shapes (" + shapes(r) + ")");
  if (r.chunk && *r.chunk < 1) throw CudaError("chunk length " + std::to_string(*r.chunk) + " is not positive (" + shapes(r) + ")");
  // The longest chunks whose shared memory per block (bytes per step, times L) fits `budget`.
  auto chunkBound = [&](int64_t perStep, int64_t budget, const std::string &what) {
    if (perStep <= 0) return INT64_MAX;
    if (budget / perStep < 1)
      throw PlanRefused("one step of " + what + " needs " + std::to_string(perStep) + " bytes of shared memory per block, more than " +
                        std::to_string(budget) + " (" + shapes(r) + "); use smaller register dimensions");
    return budget / perStep;
  };
  auto tooLong = [&](int64_t chunk, int64_t bound) {
    return PlanRefused("chunk length " + std::to_string(chunk) + " exceeds the shared-memory bound of " + std::to_string(bound) +
                       " steps (" + shapes(r) + ")");
  };
  auto withChunk = [&](Strategy s, int64_t chunk, bool stash) {
    Plan p{s, std::min(chunk, r.steps), 1, 1, stash};
    p.chunks = cdiv(r.steps, p.chunk);
    return p;
  };
  // Sequential: L = T, unless a backward recomputes states from checkpoints (one chunk of them per
  // thread in shared memory); then L = min(kSequentialChunk, the 48 KiB bound), or with the stash
  // (the chunk's inputs in shared memory too, up to the device's opt-in maximum and room for
  // kMinBlocksPerSM blocks) the fastest power of two from kMinChunk to kSequentialChunk within that
  // bound, by the cost model.
  // Stash or not, where a strategy's kernels have one (a forced choice where they do).
  auto stashes = [&](const PlanRequest::SharedPerStep &shared) {
    return !shared.stash ? std::vector<bool>{false} : r.stash ? std::vector<bool>{*r.stash} : std::vector<bool>{false, true};
  };
  int64_t stashBudget = r.sharedPerBlock - kStaticSharedReserve;
  int64_t sequentialMax = chunkBound(r.sequentialShared.plain, kSharedBudget, "recomputed state");
  // The sequential chunk without the stash, where none is forced: whole batches within the bound.
  int64_t unstashedChunk = wholeBatches(std::min(kSequentialChunk, sequentialMax), r.sequentialBatch);
  Plan sequential = withChunk(Strategy::Sequential, r.chunk ? *r.chunk : r.steps, false);
  if (r.sequentialShared.plain > 0) {
    std::optional<Plan> fastest;
    double fastestSeconds = 0;
    int64_t longestBound = 0;
    // The stash first, so that it wins a tie: its single read does not depend on what the caches
    // hold (the model counts the second read only beyond half of L2; the emulated traffic counts it).
    std::vector<bool> options = stashes(r.sequentialShared);
    for (bool stash : std::vector<bool>(options.rbegin(), options.rend())) {
      // With the stash, within the device's opt-in maximum per block and room for kMinBlocksPerSM.
      int64_t stashed = r.sequentialShared.stashed, bound = !stash ? sequentialMax : 0;
      while (stash && bound < kSequentialChunk && (bound + 1) * stashed <= stashBudget &&
             h100().blocksBySharedMemory(static_cast<size_t>((bound + 1) * stashed)) >= kMinBlocksPerSM)
        ++bound;
      longestBound = std::max(longestBound, bound);
      if (bound < 1) continue;
      // Whole batches of loads in every chunk; with the stash, powers of two from kMinChunk, and no
      // stash where those do not fit (its chunks would run every step through the remainder's path).
      if (stash && !r.chunk && bound < kMinChunk) continue;
      std::vector<int64_t> lengths{r.chunk ? *r.chunk : unstashedChunk};
      if (stash && !r.chunk) {
        lengths.clear();
        for (int64_t l = kMinChunk; l <= std::min(kSequentialChunk, bound); l *= 2) lengths.push_back(l);
      }
      for (int64_t l : lengths) {
        if (l > bound) continue;
        Plan p = withChunk(Strategy::Sequential, l, stash);
        double t = predictPlan(r, p).seconds;
        if (!fastest || t < fastestSeconds) fastest = p, fastestSeconds = t;
      }
    }
    if (!fastest && r.strategy == Strategy::Sequential && r.chunk) throw tooLong(*r.chunk, longestBound);
    // A forced stash that does not fit: the kernels read memory instead.
    sequential = fastest ? *fastest : withChunk(Strategy::Sequential, r.chunk ? std::min(*r.chunk, sequentialMax) : unstashedChunk, false);
  } else if (r.strategy == Strategy::Sequential && r.chunk && *r.chunk > sequentialMax) {
    throw tooLong(*r.chunk, sequentialMax);
  }
  if (r.strategy == Strategy::Sequential) return sequential;

  // Chunked, with and without the stash: candidates are powers of two from the shortest chunk and
  // the longest chunk that still splits T, each no longer than its shared-memory bound.
  std::optional<Plan> best;
  double bestSeconds = 0;
  std::optional<PlanRefused> refused;
  for (bool stash : stashes(r.chunkedShared)) {
    int64_t maxChunk = 0;
    try {
      maxChunk = stash ? chunkBound(r.chunkedShared.stashed, stashBudget, "recomputed state and stash")
                       : chunkBound(r.chunkedShared.plain, kSharedBudget, "recomputed state");
    } catch (const PlanRefused &e) {
      refused = e;
      continue;
    }
    int64_t longest = std::min(maxChunk, r.steps), fewest = cdiv(r.steps, r.maxGridYZ);  // the grid's z limit
    if (fewest > maxChunk) {
      refused = PlanRefused("T=" + std::to_string(r.steps) + " needs chunks longer than the shared-memory bound of " +
                            std::to_string(maxChunk) + " steps (" + shapes(r) + ")");
      continue;
    }
    if (r.chunk && *r.chunk > maxChunk) {
      refused = tooLong(*r.chunk, maxChunk);
      continue;
    }
    auto consider = [&](int64_t chunk) {
      Plan p = withChunk(Strategy::Chunked, chunk, stash);
      if (p.chunks < 2 && !r.strategy) return;
      double t = predictPlan(r, p).seconds;
      if (!best || t < bestSeconds) best = p, bestSeconds = t;
    };
    if (r.chunk) {
      Plan p = withChunk(Strategy::Chunked, std::max(*r.chunk, fewest), stash);
      double t = predictPlan(r, p).seconds;
      if (!best || t < bestSeconds) best = p, bestSeconds = t;
      continue;
    }
    // Up to all of T, or to whole batches of loads within the bound.
    int64_t top = longest == r.steps ? longest : std::max(wholeBatches(longest, r.chunkedBatch), fewest);
    for (int64_t chunk = std::max(std::min(kMinChunk, top), fewest); chunk <= top; chunk *= 2) consider(chunk);
    consider(top);
    if (!best && r.strategy == Strategy::Chunked) best = withChunk(Strategy::Chunked, longest, stash);
  }
  if (r.strategy == Strategy::Chunked || r.chunk) {  // a chunk length alone forces the chunked strategy too
    if (!best) throw *refused;
    return *best;
  }
  if (!best || bestSeconds > 0.9 * predictPlan(r, sequential).seconds) return sequential;
  return *best;
}

}  // namespace scanforge::cuda
